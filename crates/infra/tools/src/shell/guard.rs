//! `ShellGuard`: a command line parsed into an argument vector, then checked word by word.

use std::collections::BTreeSet;
use std::path::PathBuf;

use rein_tool::ToolError;

use super::launcher::{exec_form, is_launcher};

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
    launchers: BTreeSet<String>,
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
    /// The program runs other programs or code (see [`LAUNCHERS`](super::LAUNCHERS)) and
    /// is not allowed as a launcher ([`ShellGuard::allow_launchers`]); naming it among the
    /// allowed programs is not enough.
    #[error(
        "program `{program}` runs other programs or code (a launcher); it is refused unless allowed as a launcher (`launchers` in a scenario's shell configuration)"
    )]
    Launcher {
        /// The program's file name.
        program: String,
    },
    /// The program is given an argument through which it runs another program or command
    /// (`find -exec`, `sed` without `--sandbox` first, `tar --to-command`, …), and is not
    /// allowed as a launcher.
    #[error(
        "`{program}` with `{argument}` would run another program or command; that form is refused unless `{program}` is allowed as a launcher{}",
        if program.ends_with("sed") { " (give `--sandbox` as sed's first argument: it then refuses `e`, `r` and `w`)" } else { "" }
    )]
    ExecForm {
        /// The program's file name.
        program: String,
        /// The argument that runs another program (empty when one is missing, as with `sed`
        /// without `--sandbox`).
        argument: String,
    },
    /// The program is not an executable file: a name not found in any folder of the
    /// search path (the workspace's folders excluded), or a path to no executable file.
    #[error(
        "program `{program}` is not an executable file on the search path (PATH, the workspace's folders excluded); check the name"
    )]
    NotFound {
        /// The program as written.
        program: String,
    },
    /// The program named by a path is another file than the allowed program of that name on
    /// the search path (e.g. a workspace script named like an allowed program).
    #[error(
        "`{program}` is {}, not the allowed `{name}` ({}); an allowed program is the one on the search path, not a file of the same name elsewhere",
        resolved.display(), allowed.display()
    )]
    Shadowed {
        /// The program as written.
        program: String,
        /// Its file name.
        name: String,
        /// The file it names.
        resolved: PathBuf,
        /// The allowed program of that name.
        allowed: PathBuf,
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
    /// [`LAUNCHERS`](super::LAUNCHERS) when `allowed` is empty — weaker: prefer an allow
    /// list) and never the `denied` ones. Programs are compared by file name:
    /// `/usr/bin/sudo` is `sudo`.
    ///
    /// A launcher named in `allowed` is still refused: a program that runs other programs
    /// is allowed only through [`allow_launchers`](Self::allow_launchers), and an ordinary
    /// program's exec forms (`find -exec`, `sed e`) only when it is allowed that way too.
    pub fn new<A, D>(allowed: A, denied: D) -> Self
    where
        A: IntoIterator,
        A::Item: Into<String>,
        D: IntoIterator,
        D::Item: Into<String>,
    {
        Self {
            allowed: allowed.into_iter().map(Into::into).collect(),
            launchers: BTreeSet::new(),
            denied: denied
                .into_iter()
                .map(|p| p.into().to_ascii_lowercase())
                .collect(),
            denied_flags: Vec::new(),
        }
    }

    /// Allows `launchers` as launchers too: programs that run other programs or code
    /// ([`LAUNCHERS`](super::LAUNCHERS): shells, interpreters, build tools, `git`), or
    /// ordinary programs with their exec forms (`find -exec`, `sed e`). Each is then
    /// allowed with any arguments; an allowed launcher lets any program run, so the
    /// isolation and the sandbox are what bound it.
    pub fn allow_launchers<I>(mut self, launchers: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.launchers.extend(launchers.into_iter().map(Into::into));
        self
    }

    /// Whether the guard has an allow list (programs or launchers): then only those run.
    #[must_use]
    pub fn has_allow_list(&self) -> bool {
        !self.allowed.is_empty() || !self.launchers.is_empty()
    }

    /// Whether `name` (a file name) is allowed, as a program or as a launcher.
    pub(crate) fn allows(&self, name: &str) -> bool {
        self.allowed.contains(name) || self.launchers.contains(name)
    }

    /// The denied program names, case-folded.
    pub(crate) fn denied(&self) -> impl Iterator<Item = &str> {
        self.denied.iter().map(String::as_str)
    }

    /// Whether `name` is allowed as a launcher.
    pub(crate) fn allows_launcher(&self, name: &str) -> bool {
        self.launchers.contains(name)
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
        let as_launcher = self.launchers.contains(program);
        if !as_launcher && is_launcher(program) {
            return Err(ShellRejection::Launcher {
                program: program.to_owned(),
            });
        }
        if self.has_allow_list() && !self.allows(program) {
            return Err(ShellRejection::NotAllowed {
                program: program.to_owned(),
                allowed: self.allowed.union(&self.launchers).cloned().collect(),
            });
        }
        if !as_launcher && let Some(argument) = exec_form(&folded, argv.args()) {
            return Err(ShellRejection::ExecForm {
                program: program.to_owned(),
                argument,
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
