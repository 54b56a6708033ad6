#![no_main]
//! See differential::targets::validate.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::validate(data));
