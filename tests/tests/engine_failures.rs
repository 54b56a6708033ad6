//! A hostile component (tests/hostile-guest) cannot take the engine down: an infinite loop is
//! stopped at its budget, a memory bomb at the memory cap, a trap becomes an error value, and
//! the engine keeps answering afterwards.

use std::path::Path;
use std::time::{Duration, Instant};

use mcs_policy::engine::types::{AdmissionRequest, Context, Operation, Settings};
use mcs_policy::engine::{EngineError, EngineOptions, PolicyEngine};
use tests::HOSTILE_COMPONENT;

fn hostile() -> PolicyEngine {
    let options = EngineOptions {
        memory_limit_bytes: 32 << 20,
        ..EngineOptions::default()
    };
    PolicyEngine::from_file(Path::new(HOSTILE_COMPONENT), options).expect("hostile component loads")
}

fn request(uid: &str) -> AdmissionRequest {
    AdmissionRequest {
        uid: uid.to_string(),
        operation: Operation::Create,
        object: "{}".to_string(),
        old_object: None,
    }
}

fn validate(
    engine: &PolicyEngine,
    uid: &str,
    budget: Duration,
) -> Result<Result<Vec<String>, mcs_policy::engine::types::Denial>, EngineError> {
    engine.validate(
        &request(uid),
        &Settings::default(),
        &Context::default(),
        budget,
    )
}

#[test]
fn an_infinite_loop_is_stopped_at_its_budget() {
    let engine = hostile();
    let started = Instant::now();
    let err = validate(&engine, "loop", Duration::from_millis(200)).unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(
            err,
            EngineError::Timeout {
                function: "validate",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        took >= Duration::from_millis(200),
        "stopped too early: {took:?}"
    );
    assert!(took < Duration::from_secs(2), "stopped too late: {took:?}");
    assert!(err.to_string().contains("time budget"), "{err}");
}

/// `clusterset-decide` runs under the same budget, memory cap and trap handling as every call.
#[test]
fn clusterset_decide_is_bounded_like_every_call() {
    use mcs_policy::engine::types::ClustersetRead;
    let engine = hostile();
    let read = |name: &str| ClustersetRead {
        namespace: "shop".into(),
        name: name.into(),
        now: "2026-11-29T10:00:00Z".into(),
        members: vec![],
        stale_timeout_ms: None,
    };
    let started = Instant::now();
    let err = engine
        .clusterset_decide(&read("loop"), Duration::from_millis(200))
        .unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::Timeout {
                function: "clusterset-decide",
                ..
            }
        ),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let err = engine
        .clusterset_decide(&read("oom"), Duration::from_secs(5))
        .unwrap_err();
    assert!(matches!(err, EngineError::MemoryLimit { .. }), "{err}");
    let err = engine
        .clusterset_decide(&read("trap"), Duration::from_secs(5))
        .unwrap_err();
    assert!(matches!(err, EngineError::Trap { .. }), "{err}");
    // And it keeps answering.
    let answer = engine
        .clusterset_decide(&read("web"), Duration::from_secs(5))
        .unwrap();
    assert_eq!(
        answer,
        Err("the hostile component decides nothing".to_string())
    );
}

#[test]
fn a_memory_bomb_hits_the_memory_cap() {
    let engine = hostile();
    let err = engine
        .mutate(
            &request("oom"),
            &Settings::default(),
            Duration::from_secs(10),
        )
        .unwrap_err();
    assert!(
        matches!(err, EngineError::MemoryLimit { function: "mutate", limit_bytes } if limit_bytes == 32 << 20),
        "{err}"
    );
}

#[test]
fn a_trap_is_an_error_value() {
    let engine = hostile();
    let err = validate(&engine, "trap", Duration::from_secs(1)).unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::Trap {
                function: "validate",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn the_engine_keeps_answering_after_failures() {
    let engine = hostile();
    for uid in ["loop", "oom", "trap"] {
        assert!(validate(&engine, uid, Duration::from_millis(100)).is_err());
        assert_eq!(
            validate(&engine, "fine", Duration::from_secs(1)).unwrap(),
            Ok(vec![])
        );
    }
}

#[test]
fn a_broken_component_is_refused_and_the_old_one_keeps_serving() {
    let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
    let before = engine.digest();
    let dir = std::env::temp_dir().join(format!("mcs-policy-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let broken = dir.join("broken.wasm");
    std::fs::write(&broken, b"\0asm not really").unwrap();
    let err = engine.reload_from_file(&broken).unwrap_err();
    assert!(matches!(err, EngineError::Load { .. }), "{err}");
    assert_eq!(engine.digest(), before);
    let missing = engine
        .reload_from_file(&dir.join("missing.wasm"))
        .unwrap_err();
    assert!(missing.to_string().contains("missing.wasm"), "{missing}");
    assert_eq!(engine.digest(), before);
    engine
        .reload_from_file(Path::new(HOSTILE_COMPONENT))
        .unwrap();
    assert_ne!(engine.digest(), before);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn clones_share_the_component_across_threads() {
    let engine = PolicyEngine::embedded(EngineOptions::default()).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let r = request(&format!("uid-{i}"));
                engine.validate(
                    &r,
                    &Settings::default(),
                    &Context::default(),
                    Duration::from_secs(5),
                )
            })
        })
        .collect();
    for h in handles {
        // `{}` is an MCS without name or namespace: denied, but answered.
        assert!(matches!(h.join().unwrap(), Ok(Err(_))));
    }
}

fn policy_engine() -> PolicyEngine {
    PolicyEngine::embedded(EngineOptions::default()).unwrap()
}

fn create(object: String) -> AdmissionRequest {
    AdmissionRequest {
        uid: "hostile-input".into(),
        operation: Operation::Create,
        object,
        old_object: None,
    }
}

#[test]
fn deeply_nested_json_is_a_decode_error_not_a_stack_overflow() {
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let object = format!(
        r#"{{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService","spec":{{"x":{nested}}}}}"#
    );
    let verdict = policy_engine()
        .validate(
            &create(object),
            &Settings::default(),
            &Context::default(),
            Duration::from_secs(5),
        )
        .expect("no trap");
    match verdict {
        Err(mcs_policy::engine::types::Denial::Malformed(msg)) => {
            assert!(msg.contains("recursion limit"), "{msg}")
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn a_ten_mib_name_is_denied_with_a_message() {
    let name = "a".repeat(10 << 20);
    let object = format!(
        r#"{{"apiVersion":"networking.karmada.io/v1alpha1","kind":"MultiClusterService","metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{"types":["CrossCluster"]}}}}"#
    );
    let verdict = policy_engine()
        .validate(
            &create(object),
            &Settings::default(),
            &Context::default(),
            Duration::from_secs(10),
        )
        .expect("no trap");
    match verdict {
        Err(mcs_policy::engine::types::Denial::Forbidden(r)) => {
            assert!(
                r.message
                    .starts_with("metadata.name: Invalid value: \"aaaa"),
                "{}",
                &r.message[..80]
            );
            assert!(r.message.ends_with("must be no more than 63 characters"));
        }
        other => panic!("expected a denial, got {other:?}"),
    }
}
