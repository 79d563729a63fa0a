#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| loadrig::fuzzing::merge(data));
