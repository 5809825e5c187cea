//! Fuzz target `shell`: see `checks::shell`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::shell(data));
