//! The on-disk cache of compiled components (`--cache-dir`): written once per component and
//! engine configuration, reused by later engines, and a damaged entry is recompiled, not trusted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcs_policy::engine::types::{AdmissionRequest, Context, Operation, Settings};
use mcs_policy::engine::{EngineOptions, PolicyEngine};

fn cached(dir: &Path) -> PolicyEngine {
    let options = EngineOptions {
        cache_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    };
    PolicyEngine::embedded(options).expect("engine with a cache loads")
}

fn artefacts(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn answers(engine: &PolicyEngine) -> bool {
    let request = AdmissionRequest {
        uid: "cache".into(),
        operation: Operation::Delete,
        object: String::new(),
        old_object: None,
    };
    engine
        .validate(
            &request,
            &Settings::default(),
            &Context::default(),
            Duration::from_secs(5),
        )
        .is_ok_and(|v| v.is_ok())
}

#[test]
fn the_compiled_component_is_cached_reused_and_recompiled_when_damaged() {
    let dir = std::env::temp_dir().join(format!("mcs-policy-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    let first = cached(&dir);
    assert!(answers(&first));
    let files = artefacts(&dir);
    assert_eq!(
        files.len(),
        1,
        "one artefact after the first load: {files:?}"
    );
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&first.digest()) && name.ends_with(".cwasm"),
        "{name}"
    );
    let written = std::fs::metadata(&files[0]).unwrap().modified().unwrap();

    let second = cached(&dir);
    assert!(answers(&second));
    assert_eq!(artefacts(&dir), files, "a second engine reuses the entry");
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().modified().unwrap(),
        written,
        "not rewritten"
    );

    std::fs::write(&files[0], b"not a compiled component").unwrap();
    let third = cached(&dir);
    assert!(answers(&third), "a damaged entry is recompiled");
    assert_ne!(
        std::fs::read(&files[0]).unwrap(),
        b"not a compiled component",
        "and replaced"
    );
    std::fs::remove_dir_all(dir).ok();
}
