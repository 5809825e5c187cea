//! `rein`: the command line of the rein runtime. See `rein --help`, the README and
//! `docs/SCENARIOS.md`; the work is done by the library, [`rein_cli`].

fn main() -> std::process::ExitCode {
    rein_cli::main()
}
