//! Fuzz target `ledger_line`: see `checks::ledger_line`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ledger_line(data));
