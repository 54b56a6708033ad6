#![no_main]
//! See differential::targets::service.

libfuzzer_sys::fuzz_target!(|data: &[u8]| differential::targets::service(data));
