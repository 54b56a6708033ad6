//! The component under wasmtime and the guest compiled natively give the same answers, and those
//! answers keep their properties (tests/differential), on random structured calls (the
//! `structured` fuzz target's generator, fed by proptest).

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
