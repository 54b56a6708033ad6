#![no_main]
//! See differential::targets::prune.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::prune(data));
