#![no_main]
//! See differential::targets::decide.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::decide(data));
