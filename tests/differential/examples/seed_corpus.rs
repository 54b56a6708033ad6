//! Seeds the fuzz corpora from tests/fixtures: `cargo run -p differential --example seed_corpus
//! -- DIR` writes one input per fixture into `DIR/<target>/seed-<kind>-<fixture>` in each target's
//! format (differential::inputs), the same way tests/tests/fixtures.rs reads the fixtures
//! (review parsing, policy files, context files). scripts/fuzz.sh runs it before fuzzing.

use std::path::{Path, PathBuf};

use differential::inputs::{self, Admission, FilterInput, PruneInput};
use mcs_policy::settings::{ContextFile, load_policy};
use mcs_policy::webhook::review::parse_review;
use serde_json::Value;

/// Inputs larger than this are left out: libFuzzer mutates small inputs far faster, and the
/// structured target reaches the size limits on its own.
const MAX_SEED: usize = 16 << 10;

fn fixtures(root: &Path, kind: &str) -> Vec<(String, Value)> {
    let dir = root.join("tests/fixtures").join(kind);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("fixture");
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, serde_json::from_str(&text).expect("fixture JSON"))
        })
        .collect()
}

struct Seeds {
    out: PathBuf,
    written: usize,
}

impl Seeds {
    fn write(&mut self, target: &str, name: &str, data: &[u8]) {
        if data.len() > MAX_SEED {
            return;
        }
        let dir = self.out.join(target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        std::fs::write(dir.join(format!("seed-{name}")), data).expect("seed file");
        self.written += 1;
    }
}

/// A fixture's `input.template`/`input.existing`: a string is the text itself.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).expect("usage: seed_corpus DIR"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut seeds = Seeds { out, written: 0 };

    for kind in ["validate", "mutate"] {
        for (name, case) in fixtures(&root, kind) {
            let name = format!("{kind}-{name}");
            let body = case["review"].to_string();
            seeds.write("review", &name, body.as_bytes());
            let review = parse_review(body.as_bytes()).expect("fixture review parses");
            let policy = case["policy"].as_str().unwrap_or("karmada-compatible");
            let settings = load_policy(policy).expect("policy").settings;
            let context: ContextFile =
                serde_json::from_value(case["context"].clone()).unwrap_or_default();
            let admission = Admission {
                context: context.for_object(&review.namespace, &review.name),
                request: review.request,
                settings,
            };
            let bytes = inputs::admission_bytes(&admission);
            seeds.write("validate", &name, &bytes);
            seeds.write("mutate", &name, &bytes);
            let registered = admission
                .context
                .registered_clusters
                .unwrap_or_else(|| vec!["member1".into(), "member2".into()]);
            seeds.write(
                "plan",
                &name,
                &inputs::plan_bytes(&admission.request.object, &registered),
            );
        }
    }

    for (name, case) in fixtures(&root, "service") {
        let template = text(&case["input"]["template"]).unwrap_or_else(|| "null".into());
        let existing = case["input"].get("existing").and_then(text);
        seeds.write(
            "service",
            &format!("service-{name}"),
            &inputs::service_bytes(&template, existing.as_deref()),
        );
    }

    for (name, case) in fixtures(&root, "filter") {
        let name = format!("filter-{name}");
        seeds.write("filter", &name, case["input"].to_string().as_bytes());
        let input: FilterInput =
            serde_json::from_value(case["input"].clone()).expect("filter fixture input");
        let copies: Vec<_> = serde_json::from_value(Value::Array(
            case["expect"].as_array().cloned().unwrap_or_default(),
        ))
        .expect("filter fixture copies");
        let mut existing = copies;
        let desired: Vec<String> = existing
            .iter()
            .take(1)
            .filter_map(|c: &k8s_openapi::api::discovery::v1::EndpointSlice| {
                c.metadata.name.clone()
            })
            .collect();
        existing.extend(input.slices);
        for (suffix, kept) in [
            ("", vec![]),
            ("-keeping-source", vec![input.source_cluster]),
        ] {
            let prune = PruneInput {
                mcs: input.mcs.clone(),
                existing: existing.clone(),
                desired: desired.clone(),
                kept_sources: kept,
            };
            seeds.write(
                "prune",
                &format!("{name}{suffix}"),
                serde_json::to_string(&prune)
                    .expect("prune input")
                    .as_bytes(),
            );
        }
    }
    for (name, case) in fixtures(&root, "decide") {
        seeds.write(
            "decide",
            &format!("decide-{name}"),
            case["input"].to_string().as_bytes(),
        );
    }
    eprintln!(
        "wrote {} seeds under {}",
        seeds.written,
        seeds.out.display()
    );
}
