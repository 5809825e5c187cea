//! Fuzz target `decision`: see `checks::decision`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::decision(data));
