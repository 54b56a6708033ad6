use super::*;
use crate::engine::types::Rejection;

fn review_json(op: &str, object: &str) -> String {
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u-1","operation":"{op}","namespace":"ns","name":"n","object":{object}}}}}"#
    )
}

#[test]
fn parses_a_review_keeping_the_raw_object() {
    let r = parse_review(review_json("CREATE", r#"{"a": 1}"#).as_bytes()).unwrap();
    assert_eq!(r.request.uid, "u-1");
    assert_eq!(r.request.operation, Operation::Create);
    assert_eq!(r.request.object, r#"{"a": 1}"#);
    assert_eq!(r.request.old_object, None);
    assert_eq!((r.namespace.as_str(), r.name.as_str()), ("ns", "n"));
}

#[test]
fn refuses_what_is_not_an_admission_review() {
    assert!(matches!(parse_review(b"{nope"), Err(ReviewError::Json(_))));
    assert_eq!(
        parse_review(br#"{"apiVersion":"v1","kind":"AdmissionReview"}"#),
        Err(ReviewError::ApiVersion("v1".into()))
    );
    assert_eq!(
        parse_review(br#"{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}"#),
        Err(ReviewError::Kind("Pod".into()))
    );
    assert_eq!(
        parse_review(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#),
        Err(ReviewError::NoRequest)
    );
    assert_eq!(
        parse_review(review_json("PATCH", "{}").as_bytes()),
        Err(ReviewError::Operation("PATCH".into()))
    );
}

#[test]
fn invalid_utf8_is_refused_with_serde_jsons_message_and_position() {
    let mut body = review_json("CREATE", r#"{"a":"xx"}"#).into_bytes();
    let at = body.iter().position(|b| *b == b'x').unwrap();
    body[at] = 0xff;
    let Err(ReviewError::Json(message)) = parse_review(&body) else {
        panic!("invalid UTF-8 parsed");
    };
    assert!(
        message.starts_with("invalid unicode code point at line 1 column"),
        "{message}"
    );
}

#[test]
fn the_response_body_is_the_serialized_review() {
    let r = parse_review(review_json("CREATE", "{}").as_bytes()).unwrap();
    let out = validation_response(&r, Ok(vec!["careful".into()]));
    let body: ReviewOut = serde_json::from_slice(&out.to_json()).unwrap();
    assert_eq!(body, out);
}

#[test]
fn denial_is_403_forbidden_with_the_message() {
    let r = parse_review(review_json("CREATE", "{}").as_bytes()).unwrap();
    let out = validation_response(
        &r,
        Err(Denial::Forbidden(Rejection {
            errors: vec![],
            message: "m".into(),
            warnings: vec!["w".into()],
        })),
    );
    let v = serde_json::to_value(&out).unwrap();
    assert_eq!(v["response"]["uid"], "u-1");
    assert_eq!(v["response"]["allowed"], false);
    assert_eq!(v["response"]["status"]["code"], 403);
    assert_eq!(v["response"]["status"]["reason"], "Forbidden");
    assert_eq!(v["response"]["status"]["message"], "m");
    assert_eq!(v["response"]["warnings"][0], "w");
    assert_eq!(out.outcome(), "denied");
}

#[test]
fn an_overload_answer_is_counted_as_overloaded_not_as_an_error() {
    let r = parse_review(review_json("CREATE", "{}").as_bytes()).unwrap();
    let out = overload_response(&r);
    assert_eq!(
        serde_json::to_value(&out).unwrap()["response"]["status"]["code"],
        429
    );
    assert_eq!(out.outcome(), "overloaded");
}

#[test]
fn allowed_has_code_200_and_no_message() {
    let r = parse_review(review_json("CREATE", "{}").as_bytes()).unwrap();
    let v = serde_json::to_value(validation_response(&r, Ok(vec![]))).unwrap();
    assert_eq!(v["response"]["allowed"], true);
    assert_eq!(v["response"]["status"]["code"], 200);
    assert!(v["response"]["status"].get("message").is_none());
    assert!(v["response"].get("warnings").is_none());
}

#[test]
fn patch_is_base64_json_patch() {
    let r = parse_review(review_json("CREATE", "{}").as_bytes()).unwrap();
    let out = mutation_response(
        &r,
        Ok(vec![PatchOperation {
            op: PatchOp::Add,
            path: "/metadata/labels".into(),
            value: r#"{"k":"v"}"#.into(),
        }]),
    );
    assert_eq!(out.response.patch_type.as_deref(), Some("JSONPatch"));
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(out.response.patch.unwrap())
        .unwrap();
    let patch: serde_json::Value = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(
        patch,
        serde_json::json!([{"op":"add","path":"/metadata/labels","value":{"k":"v"}}])
    );
    let none = mutation_response(&r, Ok(vec![]));
    assert_eq!(none.response.patch, None);
    assert_eq!(none.response.patch_type, None);
}
