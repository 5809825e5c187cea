//! Fuzz target `ledger_file`: see `checks::ledger_file`.
#![no_main]

#[path = "../checks/mod.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::ledger_file(data));
