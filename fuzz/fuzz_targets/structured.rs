#![no_main]
//! See differential::targets::structured.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::structured(data));
