#![no_main]
//! See differential::targets::review.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::review(data));
