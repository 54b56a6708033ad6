//! The component under wasmtime and the guest compiled natively give the same answers, and those
//! answers keep their properties (tests/differential): on random structured calls (the
//! `structured` fuzz target's generator, fed by proptest), and on the checked-in fuzz corpus of
//! every target (fuzz/corpus, which includes every input a fuzzer once failed on).
//! The fuzzers themselves run from scripts/fuzz.sh; see TESTING.md.

use std::path::PathBuf;
use std::time::Instant;

use differential::targets;
use proptest::prelude::*;

/// Random calls per run: enough to vary every entry point each run, few enough to stay quick
/// (under a second). `PROPTEST_CASES=N` runs N instead.
const CASES: u32 = 384;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Failing inputs are kept in tests/proptest-regressions/ and tried first next time.
        ..ProptestConfig::default()
    })]

    #[test]
    fn component_and_native_guest_agree_on_random_structured_calls(
        bytes in proptest::collection::vec(any::<u8>(), 0..3000)
    ) {
        targets::structured(&bytes);
    }
}

#[test]
fn the_checked_in_fuzz_corpus_replays_cleanly_through_every_target() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let start = Instant::now();
    let mut replayed = 0;
    for (name, target) in targets::ALL {
        let dir = root.join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.expect("directory entry").path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus for the {name} target");
        for file in files {
            let data = std::fs::read(&file).expect("corpus file");
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(
                outcome.is_ok(),
                "{name} target fails on {} (see the panic above)",
                file.display()
            );
            replayed += 1;
        }
    }
    eprintln!("replayed {replayed} corpus inputs in {:?}", start.elapsed());
}
