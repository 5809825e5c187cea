//! Fuzz target `policy`: see `checks::policy`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::policy(data));
