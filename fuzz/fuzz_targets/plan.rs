#![no_main]
//! See differential::targets::plan.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::plan(data));
