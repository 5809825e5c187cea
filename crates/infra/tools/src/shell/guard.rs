//! `ShellGuard`: a command line parsed into an argument vector, then checked word by word.

use std::collections::BTreeSet;

use rein_tool::ToolError;

/// Programs that run other programs or code given as arguments: an allowed launcher would
/// let any program through. Refused unless named in the allow list.
pub const LAUNCHERS: &[&str] = &[
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
    "env",
    "sudo",
    "doas",
    "su",
    "pkexec",
    "runuser",
    "nohup",
    "nice",
    "ionice",
    "timeout",
    "xargs",
    "stdbuf",
    "setsid",
    "chroot",
    "unshare",
    "nsenter",
    "script",
    "exec",
    "command",
    "eval",
    "builtin",
    "time",
    "watch",
    "strace",
    "ltrace",
    "gdb",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "perl",
    "python",
    "python2",
    "python3",
    "ruby",
    "node",
    "php",
    "lua",
    "tclsh",
    "pwsh",
    "powershell",
    "cmd",
    "ssh",
];

/// Characters a shell gives meaning to: command separators and operators (`;`, `&`, `|`),
/// redirections (`<`, `>`), substitutions (`` ` ``, `$`) and subshells (`(`, `)`). The guard
/// refuses them even quoted: the argument vector it returns never holds one, so it stays
/// harmless even if someone later hands it to a shell.
pub const METACHARACTERS: &[char] = &[';', '&', '|', '<', '>', '`', '$', '(', ')'];

/// Decides whether a command line may run: see the [module docs](crate::shell).
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct ShellGuard {
    allowed: BTreeSet<String>,
    denied: BTreeSet<String>,
    denied_flags: Vec<(String, Vec<Vec<String>>)>,
}

/// A command line the guard accepted: its words, unquoted. `words()[0]` is the program as
/// written; [`Argv::program`] is its file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv {
    words: Vec<String>,
}

/// Why the guard refused a command line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShellRejection {
    /// Nothing to run.
    #[error("the command line is empty")]
    Empty,
    /// A quote is not closed, or the line ends in a backslash.
    #[error("the command line does not parse: a quote is not closed or it ends in a backslash")]
    Unparsable,
    /// A newline, carriage return, NUL or other control character (a tab is a space).
    #[error(
        "the command line holds control character U+{code:04X} at byte {at}; give one command on one line"
    )]
    ControlCharacter {
        /// Its byte offset.
        at: usize,
        /// Its code point.
        code: u32,
    },
    /// A shell operator, redirection or substitution character in word `word`.
    #[error(
        "word {word} holds `{character}`, which a shell gives meaning to; operators, redirections and substitutions are refused"
    )]
    Metacharacter {
        /// The word's index (0 is the program).
        word: usize,
        /// The character.
        character: char,
    },
    /// A `#` that starts a comment: part of the line would be silently ignored.
    #[error("the command line holds a comment; remove the `#` part")]
    Comment,
    /// The line starts with an environment assignment (`NAME=value program`).
    #[error(
        "`{assignment}` sets an environment variable for the program; environment prefixes are refused"
    )]
    EnvAssignment {
        /// The assignment.
        assignment: String,
    },
    /// The program is empty, `.` or `..` once its folder is stripped.
    #[error("{program:?} does not name a program")]
    InvalidProgram {
        /// The program as written.
        program: String,
    },
    /// The program is on the deny list (compared by file name, ignoring case).
    #[error("program `{program}` is denied")]
    Denied {
        /// The program's file name.
        program: String,
    },
    /// The program runs other programs or code (see [`LAUNCHERS`]) and is not allowed by name.
    #[error(
        "program `{program}` runs other programs or code; it is refused unless allowed by name"
    )]
    Launcher {
        /// The program's file name.
        program: String,
    },
    /// The guard has an allow list and the program is not on it.
    #[error("program `{program}` is not among the allowed programs: {}", allowed.join(", "))]
    NotAllowed {
        /// The program's file name.
        program: String,
        /// The allowed programs.
        allowed: Vec<String>,
    },
    /// The program is called with a combination of flags the guard denies for it.
    #[error("`{program}` with {} is denied", flags.join(" "))]
    DeniedFlags {
        /// The program's file name.
        program: String,
        /// The denied flags it was given, one spelling per group.
        flags: Vec<String>,
    },
}

impl ShellGuard {
    /// A guard that allows only `allowed` programs (any program but the denied ones and
    /// [`LAUNCHERS`] when `allowed` is empty — weaker: prefer an allow list) and never the
    /// `denied` ones. Programs are compared by file name: `/usr/bin/sudo` is `sudo`.
    pub fn new<A, D>(allowed: A, denied: D) -> Self
    where
        A: IntoIterator,
        A::Item: Into<String>,
        D: IntoIterator,
        D::Item: Into<String>,
    {
        Self {
            allowed: allowed.into_iter().map(Into::into).collect(),
            denied: denied
                .into_iter()
                .map(|p| p.into().to_ascii_lowercase())
                .collect(),
            denied_flags: Vec::new(),
        }
    }

    /// Denies `program` when it is given at least one spelling of every group of `flags`,
    /// however they are split or combined: with `[["-r", "-R", "--recursive"], ["-f",
    /// "--force"]]`, `rm -rf`, `rm -r -f`, `rm -fR`, `rm --force --recursive` and `rm / -rf`
    /// are all denied; `rm -r`, and `rm -- -rf` (a file named `-rf`), are not.
    pub fn deny_flags(mut self, program: &str, flags: &[&[&str]]) -> Self {
        let groups = flags
            .iter()
            .map(|group| group.iter().map(|&s| s.to_owned()).collect())
            .collect();
        self.denied_flags.push((program.to_owned(), groups));
        self
    }

    /// Parses `line` and decides whether it may run.
    ///
    /// # Errors
    /// A [`ShellRejection`] saying what was refused: control characters, a line that does not
    /// parse, shell metacharacters or comments, an environment prefix, a denied program or
    /// launcher, a program not allowed, or denied flags.
    pub fn check(&self, line: &str) -> Result<Argv, ShellRejection> {
        if let Some((at, c)) = line
            .char_indices()
            .find(|&(_, c)| c.is_control() && c != '\t')
        {
            return Err(ShellRejection::ControlCharacter {
                at,
                code: u32::from(c),
            });
        }
        let words = shlex::split(line).ok_or(ShellRejection::Unparsable)?;
        // shlex drops a comment; a `#` that is in the line but in no word started one.
        let hashes = |s: &str| s.matches('#').count();
        if hashes(line) > words.iter().map(|w| hashes(w)).sum() {
            return Err(ShellRejection::Comment);
        }
        self.check_argv(words)
    }

    /// Decides whether an already split argument vector may run (the same rules as
    /// [`check`](Self::check), after parsing).
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn check_argv(&self, words: Vec<String>) -> Result<Argv, ShellRejection> {
        let Some(first) = words.first() else {
            return Err(ShellRejection::Empty);
        };
        for (word, text) in words.iter().enumerate() {
            if let Some(c) = text
                .chars()
                .find(|c| METACHARACTERS.contains(c) || (c.is_control() && *c != '\t'))
            {
                return Err(ShellRejection::Metacharacter { word, character: c });
            }
        }
        if is_assignment(first) {
            return Err(ShellRejection::EnvAssignment {
                assignment: first.clone(),
            });
        }
        let argv = Argv { words };
        let program = argv.program();
        if program.is_empty() || program == "." || program == ".." {
            return Err(ShellRejection::InvalidProgram {
                program: argv.words[0].clone(),
            });
        }
        let folded = program.to_ascii_lowercase();
        if self.denied.contains(&folded) {
            return Err(ShellRejection::Denied {
                program: program.to_owned(),
            });
        }
        let allowed = self.allowed.contains(program);
        if !allowed && LAUNCHERS.contains(&folded.as_str()) {
            return Err(ShellRejection::Launcher {
                program: program.to_owned(),
            });
        }
        if !self.allowed.is_empty() && !allowed {
            return Err(ShellRejection::NotAllowed {
                program: program.to_owned(),
                allowed: self.allowed.iter().cloned().collect(),
            });
        }
        for (denied, groups) in &self.denied_flags {
            if denied.eq_ignore_ascii_case(program)
                && let Some(flags) = argv.matching_flags(groups)
            {
                return Err(ShellRejection::DeniedFlags {
                    program: program.to_owned(),
                    flags,
                });
            }
        }
        Ok(argv)
    }
}

impl Argv {
    /// Every word, the program first.
    #[must_use]
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The words, to hand to `std::process::Command`.
    #[must_use]
    pub fn into_words(self) -> Vec<String> {
        self.words
    }

    /// The program's file name: the first word without its folders (`/usr/bin/ls` → `ls`).
    #[must_use]
    pub fn program(&self) -> &str {
        let first = &self.words[0];
        first.rsplit('/').next().unwrap_or(first)
    }

    /// The arguments after the program.
    #[must_use]
    pub fn args(&self) -> &[String] {
        &self.words[1..]
    }

    /// Every flag given, one spelling each: short clusters split (`-rf` → `-r`, `-f`), long
    /// options without their `=value`, nothing after `--`.
    #[must_use]
    pub fn flags(&self) -> BTreeSet<String> {
        let mut flags = BTreeSet::new();
        for arg in self.args() {
            if arg == "--" {
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                let name = long.split('=').next().unwrap_or(long);
                flags.insert(format!("--{name}"));
            } else if let Some(short) = arg.strip_prefix('-') {
                flags.extend(short.chars().map(|c| format!("-{c}")));
            }
        }
        flags
    }

    /// One given spelling per group when every group has one given; `None` otherwise.
    fn matching_flags(&self, groups: &[Vec<String>]) -> Option<Vec<String>> {
        let given = self.flags();
        groups
            .iter()
            .map(|group| {
                group
                    .iter()
                    .find(|spelling| given.contains(*spelling))
                    .cloned()
            })
            .collect()
    }
}

impl From<ShellRejection> for ToolError {
    fn from(rejection: ShellRejection) -> Self {
        Self::invalid_input(rejection.to_string())
    }
}

/// Whether `word` is `NAME=value` with a shell variable name.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_split_clusters_and_stop_at_the_end_of_options() {
        let argv = |line: &str| ShellGuard::default().check(line).unwrap();
        let flags: Vec<String> = argv("rm -rf --force=yes x -- -q")
            .flags()
            .into_iter()
            .collect();
        assert_eq!(flags, ["--force", "-f", "-r"]);
        assert_eq!(argv("/bin/ls -l").program(), "ls");
        assert_eq!(argv("ls").args(), [] as [String; 0]);
    }

    #[test]
    fn assignments_are_names_then_equals() {
        assert!(is_assignment("FOO=bar"));
        assert!(is_assignment("_x1="));
        assert!(!is_assignment("1X=y"));
        assert!(!is_assignment("--opt=y"));
        assert!(!is_assignment("ls"));
    }
}
