#![no_main]
//! See differential::targets::filter.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::filter(data));
