//! Programs that run other programs: named launchers (shells, interpreters, build tools,
//! wrappers), and the argument forms through which an ordinary program becomes one
//! (`find -exec`, `sed e`, `tar --to-command`, …).
//!
//! The lists narrow what a model tries; they are not a boundary (a program not listed may
//! still run code it is given). The boundary is the isolation and the sandbox `shell.run`
//! runs every command in: see `docs/ARCHITECTURE.md`, "shell.run's threat model".

/// Programs that run other programs or code given as arguments, or that run the
/// workspace's own code (build tools, version control with hooks): an allowed launcher
/// would let any program through. Refused unless allowed *as a launcher*
/// ([`ShellGuard::allow_launchers`](super::ShellGuard::allow_launchers)). A name matches
/// case-folded, and with a version suffix dropped too (`python3.12`, `gcc-13`).
pub const LAUNCHERS: &[&str] = &[
    // shells and multi-call binaries
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "toybox",
    // wrappers that run their arguments as a command
    "env",
    "sudo",
    "doas",
    "su",
    "sg",
    "newgrp",
    "pkexec",
    "runuser",
    "nohup",
    "nice",
    "ionice",
    "chrt",
    "taskset",
    "numactl",
    "prlimit",
    "setpriv",
    "capsh",
    "flock",
    "timeout",
    "xargs",
    "parallel",
    "stdbuf",
    "setsid",
    "chroot",
    "unshare",
    "nsenter",
    "systemd-run",
    "firejail",
    "bwrap",
    "proot",
    "fakeroot",
    "script",
    "exec",
    "command",
    "eval",
    "builtin",
    "time",
    "watch",
    "entr",
    "at",
    "batch",
    "crontab",
    "run-parts",
    "start-stop-daemon",
    "strace",
    "ltrace",
    "gdb",
    "valgrind",
    "perf",
    // interpreters and languages that run code given inline or from a file
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "m4",
    "perl",
    "python",
    "ruby",
    "irb",
    "node",
    "nodejs",
    "deno",
    "bun",
    "bunx",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "r",
    "rscript",
    "julia",
    "java",
    "jshell",
    "guile",
    "racket",
    "sbcl",
    "ocaml",
    "ghci",
    "runghc",
    "erl",
    "elixir",
    "swift",
    "osascript",
    "pwsh",
    "powershell",
    "cmd",
    // build tools, package managers and compilers: they run the workspace's own code
    "make",
    "gmake",
    "cmake",
    "ninja",
    "meson",
    "cargo",
    "go",
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "pip",
    "pipx",
    "uv",
    "uvx",
    "poetry",
    "tox",
    "nox",
    "gradle",
    "gradlew",
    "mvn",
    "ant",
    "bazel",
    "cc",
    "c++",
    "gcc",
    "g++",
    "clang",
    "clang++",
    // version control: hooks, aliases, `-c core.*=!…`, external diff and merge drivers
    "git",
    "hg",
    "svn",
    // editors and pagers with a `!command`
    "vi",
    "vim",
    "nvim",
    "view",
    "ex",
    "ed",
    "emacs",
    "less",
    "more",
    "man",
    // remote shells and socket relays
    "ssh",
    "scp",
    "sftp",
    "rsh",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "docker",
    "podman",
    "kubectl",
];

/// Whether `program` (a file name, not a path) is a launcher: on [`LAUNCHERS`] as written
/// (case-folded) or once a version suffix is dropped (`python3.12` → `python`, `gcc-13` →
/// `gcc`).
#[must_use]
pub fn is_launcher(program: &str) -> bool {
    let folded = program.to_ascii_lowercase();
    let stem = folded.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    LAUNCHERS.contains(&folded.as_str()) || (!stem.is_empty() && LAUNCHERS.contains(&stem))
}

/// The argument of `args` through which `program` (a file name, case-folded) would run
/// another program or a command, if any: `find -exec`, `sed` without `--sandbox` first,
/// `tar --to-command`, `sort --compress-program`, `split --filter`, `rg --pre`,
/// `fd --exec`, `rsync -e`, `zip -TT`. A long option also matches by any prefix (GNU
/// programs accept unambiguous abbreviations), a short one inside any cluster; over-refusal
/// is the safe side.
pub(crate) fn exec_form(program: &str, args: &[String]) -> Option<String> {
    let rule = EXEC_FORMS
        .iter()
        .find(|rule| rule.programs.contains(&program))?;
    if rule.sandbox_first {
        // GNU sed's own guard: with `--sandbox` as the first argument (where it cannot be
        // the value of another option), it refuses `e`, `s///e`, `r` and `w` in every
        // script, `-f` files included.
        return match args.first() {
            Some(first) if first == "--sandbox" => None,
            Some(first) => Some(first.clone()),
            None => Some(String::new()),
        };
    }
    // No stop at `--`: `find -- . -exec …` still runs, and over-refusing a pattern that
    // looks like an exec form is the safe side.
    for (i, arg) in args.iter().enumerate() {
        if rule.words.contains(&arg.as_str()) {
            return Some(arg.clone());
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if !name.is_empty() && rule.long.iter().any(|l| l.starts_with(name)) {
                return Some(arg.clone());
            }
        } else if let Some(short) = arg.strip_prefix('-') {
            if rule.short.iter().any(|s| short.contains(*s)) {
                return Some(arg.clone());
            }
        } else if i == 0 && rule.old_style && rule.short.iter().any(|s| arg.contains(*s)) {
            // `tar xIf prog a.tar`: tar's first word may be a dashless option cluster.
            return Some(arg.clone());
        }
    }
    None
}

/// How an ordinary program becomes a launcher through its arguments.
struct ExecForm {
    /// The program's file names.
    programs: &'static [&'static str],
    /// Exact words (`find`'s single-dash long options).
    words: &'static [&'static str],
    /// Long options, without `--`.
    long: &'static [&'static str],
    /// Short options (each character inside a `-` cluster).
    short: &'static [&'static str],
    /// The first word may be a dashless short-option cluster (`tar`).
    old_style: bool,
    /// Runs only with `--sandbox` as its first argument (`sed`).
    sandbox_first: bool,
}

const NONE: &[&str] = &[];

const EXEC_FORMS: &[ExecForm] = &[
    ExecForm {
        programs: &["find", "gfind"],
        words: &["-exec", "-execdir", "-ok", "-okdir"],
        long: NONE,
        short: NONE,
        old_style: false,
        sandbox_first: false,
    },
    ExecForm {
        programs: &["sed", "gsed"],
        words: NONE,
        long: NONE,
        short: NONE,
        old_style: false,
        sandbox_first: true,
    },
    ExecForm {
        programs: &["tar", "gtar", "bsdtar"],
        words: NONE,
        long: &[
            "to-command",
            "use-compress-program",
            "checkpoint-action",
            "info-script",
            "new-volume-script",
            "rsh-command",
            "rmt-command",
        ],
        short: &["I", "F"],
        old_style: true,
        sandbox_first: false,
    },
    ExecForm {
        programs: &["sort", "gsort"],
        words: NONE,
        long: &["compress-program"],
        short: NONE,
        old_style: false,
        sandbox_first: false,
    },
    ExecForm {
        programs: &["split", "gsplit"],
        words: NONE,
        long: &["filter"],
        short: NONE,
        old_style: false,
        sandbox_first: false,
    },
    ExecForm {
        programs: &["rg"],
        words: NONE,
        long: &["pre"],
        short: NONE,
        old_style: false,
        sandbox_first: false,
    },
    ExecForm {
        programs: &["fd", "fdfind"],
        words: NONE,
        long: &["exec", "exec-batch"],
        short: &["x", "X"],
        old_style: false,
        sandbox_first: false,
    },
    ExecForm {
        programs: &["rsync"],
        words: NONE,
        long: &["rsh", "rsync-path"],
        short: &["e"],
        old_style: false,
        sandbox_first: false,
    },
    ExecForm {
        programs: &["zip"],
        words: NONE,
        long: &["unzip-command"],
        short: &["T"],
        old_style: false,
        sandbox_first: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn form(line: &str) -> Option<String> {
        let words: Vec<String> = line.split(' ').map(str::to_owned).collect();
        exec_form(&words[0], &words[1..])
    }

    #[test]
    fn exec_forms_are_found_however_they_are_spelled() {
        for line in [
            "find . -exec rm {} +",
            "find . -execdir rm {} ;",
            "find . -ok rm {} ;",
            "find -- . -exec rm {} +",
            "sed -n 1e",
            "sed -f --sandbox x",
            "sed",
            "tar --to-command=sh -xf a.tar",
            "tar --to-com sh -xf a.tar",
            "tar -xI sh -f a.tar",
            "tar xIf sh a.tar",
            "tar --checkpoint-action=exec=sh -cf a.tar .",
            "sort --compress-program=sh x",
            "split --filter=sh x",
            "rg --pre sh x",
            "fd -x rm",
            "rsync -ave sh a b",
            "zip -TT sh a.zip x",
        ] {
            assert!(form(line).is_some(), "{line}");
        }
        for line in [
            "find . -name x -print",
            "sed --sandbox -n 1p x",
            "tar -xf a.tar",
            "tar xzf a.tar",
            "sort -n x",
            "rg pre x",
            "ls -exec",
        ] {
            assert_eq!(form(line), None, "{line}");
        }
    }

    #[test]
    fn launchers_match_with_a_version_suffix() {
        for name in [
            "python3",
            "python3.12",
            "Perl",
            "gcc-13",
            "node18",
            "m4",
            "git",
        ] {
            assert!(is_launcher(name), "{name}");
        }
        for name in ["cat", "ls", "seq", "rg", "find", "3"] {
            assert!(!is_launcher(name), "{name}");
        }
    }
}
