//! The options of a list or watch (`metainternalversion.ListOptions`): decoded from the query
//! as the apiserver's parameter codec decodes them, defaulted by `SetListOptionsDefaults`
//! (with the WatchList feature on, a watch from "" or "0" becomes a streaming list:
//! `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`) and validated by
//! `ValidateListOptions` (422 `ListOptions.meta.k8s.io "" is invalid`).

use serde_json::{Value, json};

use super::params::Params;
use crate::label_syntax::go_quote;
use crate::status::ApiError;

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Exact,
    NotOlderThan,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListOptions {
    pub watch: bool,
    /// `resourceVersion` ("" when absent).
    pub resource_version: String,
    pub resource_version_match: Option<Match>,
    pub limit: i64,
    /// `continue` ("" when absent).
    pub continue_token: String,
    pub send_initial_events: Option<bool>,
    pub allow_watch_bookmarks: bool,
    pub timeout_seconds: Option<i64>,
    /// `resourceVersionMatch` as given (also when it is none of the known values).
    raw_match: String,
}

/// A query boolean as the apiserver reads it: anything but `0` or `false` is true.
pub fn go_bool(text: &str) -> bool {
    !(text == "0" || text.eq_ignore_ascii_case("false"))
}

fn go_int(key: &str, text: &str) -> Result<i64, ApiError> {
    text.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "strconv.ParseInt: parsing {}: invalid syntax (query parameter {key})",
            go_quote(text)
        ))
    })
}

impl ListOptions {
    /// Decodes, defaults and validates the options of a list (`watch` false) or watch.
    pub fn from_params(params: &Params) -> Result<Self, ApiError> {
        let mut options = Self::decode(params)?;
        options.set_defaults();
        let errors = options.validate();
        if errors.is_empty() {
            Ok(options)
        } else {
            Err(invalid("ListOptions", &errors))
        }
    }

    fn decode(params: &Params) -> Result<Self, ApiError> {
        let text = |key: &str| params.get(key).unwrap_or_default().to_owned();
        let int = |key: &str| params.get(key).map(|v| go_int(key, v)).transpose();
        let resource_version_match = match params.get("resourceVersionMatch").unwrap_or_default() {
            "Exact" => Some(Match::Exact),
            "NotOlderThan" => Some(Match::NotOlderThan),
            _ => None,
        };
        Ok(Self {
            watch: params.get("watch").is_some_and(go_bool),
            resource_version: text("resourceVersion"),
            resource_version_match,
            limit: int("limit")?.unwrap_or(0),
            continue_token: text("continue"),
            send_initial_events: params.get("sendInitialEvents").map(go_bool),
            allow_watch_bookmarks: params.get("allowWatchBookmarks").is_some_and(go_bool),
            timeout_seconds: int("timeoutSeconds")?,
            raw_match: text("resourceVersionMatch"),
        })
    }

    /// `SetListOptionsDefaults` with the WatchList feature enabled.
    fn set_defaults(&mut self) {
        let legacy = matches!(self.resource_version.as_str(), "" | "0");
        if self.watch && legacy && self.send_initial_events.is_none() && self.raw_match.is_empty() {
            self.send_initial_events = Some(true);
            self.resource_version_match = Some(Match::NotOlderThan);
            self.raw_match = "NotOlderThan".to_owned();
        }
    }

    /// `ValidateListOptions`.
    fn validate(&self) -> Vec<Cause> {
        let field = "resourceVersionMatch";
        let mut errors = Vec::new();
        let given = !self.raw_match.is_empty();
        let shown = self.raw_match.as_str();
        if self.watch {
            if self.send_initial_events.is_some()
                && self.resource_version_match != Some(Match::NotOlderThan)
            {
                errors.push(Cause::forbidden(
                    field,
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if given {
                if self.send_initial_events.is_none() {
                    errors.push(Cause::forbidden(field, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
                }
                if self.resource_version_match != Some(Match::NotOlderThan) {
                    errors.push(Cause::not_supported(field, shown, &["NotOlderThan"]));
                }
                if !self.continue_token.is_empty() {
                    errors.push(Cause::forbidden(
                        field,
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
            }
            return errors;
        }
        if given {
            if self.resource_version.is_empty() {
                errors.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if !self.continue_token.is_empty() {
                errors.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if self.resource_version_match.is_none() {
                errors.push(Cause::not_supported(
                    field,
                    shown,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if self.resource_version_match == Some(Match::Exact) && self.resource_version == "0" {
                errors.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            errors.push(Cause::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        errors
    }

    /// The requested resourceVersion as a number (None for "" and "0").
    pub fn parsed_resource_version(&self) -> Result<Option<u64>, ApiError> {
        parse_resource_version(&self.resource_version)
    }
}

/// A resourceVersion parameter (`APIObjectVersioner.ParseResourceVersion`): None for "" and "0".
pub fn parse_resource_version(text: &str) -> Result<Option<u64>, ApiError> {
    match text {
        "" | "0" => Ok(None),
        _ => text.parse().map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resource version: resourceVersion: Invalid value: {}: strconv.ParseUint: parsing {}: invalid syntax",
                go_quote(text),
                go_quote(text)
            ))
        }),
    }
}

/// One `field.Error` of a 422.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    reason: &'static str,
    /// `ErrorBody()`: the type and the detail.
    body: String,
    field: String,
}

impl Cause {
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueForbidden",
            body: format!("Forbidden: {detail}"),
            field: field.to_owned(),
        }
    }

    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueInvalid",
            body: format!("Invalid value: {}: {detail}", go_quote(value)),
            field: field.to_owned(),
        }
    }

    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        Self {
            reason: "FieldValueNotSupported",
            body: format!(
                "Unsupported value: {}: supported values: {}",
                go_quote(value),
                supported.join(", ")
            ),
            field: field.to_owned(),
        }
    }
}

/// `errors.NewInvalid(meta.k8s.io/<kind>, "", causes)`.
pub fn invalid(kind: &str, causes: &[Cause]) -> ApiError {
    let texts: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.body))
        .collect();
    let aggregated = match texts.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let causes: Vec<Value> = causes
        .iter()
        .map(|c| json!({"reason": c.reason, "message": c.body, "field": c.field}))
        .collect();
    ApiError {
        code: 422,
        reason: "Invalid",
        message: format!("{kind}.meta.k8s.io \"\" is invalid: {aggregated}"),
        details: Some(json!({"group": "meta.k8s.io", "kind": kind, "causes": causes})),
        retry_after_seconds: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Uri;

    fn options(query: &str) -> Result<ListOptions, ApiError> {
        let uri: Uri = format!("/x?{query}").parse().unwrap();
        ListOptions::from_params(&Params::from_uri(&uri).unwrap())
    }

    #[test]
    fn watches_from_nothing_become_streaming_lists() {
        let watch = options("watch=1").unwrap();
        assert_eq!(watch.send_initial_events, Some(true));
        assert_eq!(watch.resource_version_match, Some(Match::NotOlderThan));
        let resumed = options("watch=true&resourceVersion=5").unwrap();
        assert_eq!(resumed.send_initial_events, None);
        let list = options("resourceVersion=0&limit=2").unwrap();
        assert_eq!((list.send_initial_events, list.limit), (None, 2));
        assert!(!options("watch=false").unwrap().watch);
    }

    #[test]
    fn send_initial_events_needs_not_older_than() {
        let error = options("watch=true&sendInitialEvents=true").unwrap_err();
        assert_eq!(error.code, 422);
        assert_eq!(
            error.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        );
        let details = error.details.unwrap();
        assert_eq!(details["group"], "meta.k8s.io");
        assert_eq!(details["causes"][0]["reason"], "FieldValueForbidden");
        assert_eq!(
            details["causes"][0]["message"],
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        );
        let two =
            options("watch=true&sendInitialEvents=true&resourceVersionMatch=Exact").unwrap_err();
        assert!(two.message.contains("[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"), "{}", two.message);
    }

    #[test]
    fn list_options_are_validated_like_the_apiserver() {
        let message = |q: &str| options(q).unwrap_err().message;
        assert!(message("resourceVersionMatch=Exact").ends_with("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"));
        assert!(message("resourceVersion=0&resourceVersionMatch=Exact").ends_with("resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        assert!(message("resourceVersion=1&resourceVersionMatch=Newest").ends_with("resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\""));
        assert!(
            message("sendInitialEvents=true")
                .ends_with("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list")
        );
        assert_eq!(options("limit=x").unwrap_err().code, 400);
        assert!(options("resourceVersion=3&resourceVersionMatch=NotOlderThan").is_ok());
    }
}
