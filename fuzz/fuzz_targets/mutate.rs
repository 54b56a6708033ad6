#![no_main]
//! See differential::targets::mutate.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::mutate(data));
