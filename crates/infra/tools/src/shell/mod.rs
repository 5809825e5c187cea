//! A guard for tools that run commands: decides on the argument vector a command line
//! parses to, never on substrings of the line.
//!
//! A tool that runs commands (the built-in `shell.run`, or a team's own) puts a
//! [`ShellGuard`] in front of it: [`ShellGuard::check`] parses the line the planner proposed into an [`Argv`] with POSIX shell quoting rules (the `shlex` crate) and refuses
//! it with a typed [`ShellRejection`] unless it is one plain program invocation the guard
//! allows. [`ShellGuard::resolve`] then names the file it runs: an allowed name is the
//! program of that name on the search path, never a workspace file of the same name. The
//! tool runs that file directly (no `sh -c`), so what was checked is what runs.
//!
//! **The threat model.** The guard narrows what a model *tries*: it turns a proposed line
//! into one plain invocation of a program the operator named, and refuses the well-known
//! ways around that. It is not a boundary: an allowed program may still do what a denied
//! one does (`find -delete` deletes without `rm`), and a launcher — a program that runs
//! other programs or code ([`LAUNCHERS`]: shells, interpreters, build tools, `git`, whose
//! hooks are the workspace's code) — runs anything. So launchers, and ordinary programs'
//! exec forms (`find -exec`, `sed e`, `tar --to-command`, …), are refused unless allowed
//! *as launchers* ([`ShellGuard::allow_launchers`]). The boundary is what `shell.run` runs
//! every command in: its own PID, mount and user namespaces ([`Isolation`]: it sees no other
//! process, so not rein's environment and API keys, and nothing it starts outlives the
//! call), the optional Landlock sandbox (writes only inside the workspace) and the optional
//! process bound.
//!
//! Substring guards are bypassed in well-known ways; each of these is a parsed fact here:
//!
//! | bypass | what the guard sees |
//! |---|---|
//! | `r"m" -rf /`, `r\m -rf /`, `'rm' -rf /` | program `rm` after unquoting |
//! | `rm -r -f /`, `rm -fr /`, `rm --recursive --force /`, `rm / -rf` | the flag set {r, f} |
//! | `ls; rm -rf /`, `ls && rm`, `ls \|\| rm`, `ls \| sh` | an operator: refused |
//! | `` echo `id` ``, `echo $(id)`, `echo ${HOME}` | a substitution: refused |
//! | `cat < /etc/shadow`, `echo x > ~/.bashrc` | a redirection: refused |
//! | `FOO=bar rm -rf /`, `env rm -rf /`, `sudo rm`, `bash -c '…'` | an environment prefix or a launcher: refused |
//! | `find . -exec rm {} +`, `sed -n '1e rm x' f`, `git -c core.pager=… log`, `python3.12 x.py` | an exec form or a launcher: refused unless allowed as a launcher |
//! | `tools/cat` with `cat` allowed | another file than PATH's `cat`: refused (by [`ShellGuard::resolve`]) |
//! | `/usr/bin/sudo`, `./sudo`, `/bin/../usr/bin/RM` | the program's file name, case-folded for the deny list |
//! | `ls\nrm -rf /`, `ls\rrm` | a control character: refused before parsing |
//! | `ls # ; rm -rf /` | a comment: refused |
//!
//! ```
//! use rein_tools::shell::{ShellGuard, ShellRejection};
//!
//! let guard = ShellGuard::new(["ls", "cat", "rm"], ["sudo"])
//!     .deny_flags("rm", &[&["-r", "-R", "--recursive"], &["-f", "--force"]]);
//!
//! let argv = guard.check("ls -la 'My Documents'")?;
//! assert_eq!(argv.words(), ["ls", "-la", "My Documents"]);
//!
//! assert!(matches!(guard.check("rm -r -f /"), Err(ShellRejection::DeniedFlags { .. })));
//! assert!(matches!(guard.check(r#"r"m" -fr /"#), Err(ShellRejection::DeniedFlags { .. })));
//! assert!(guard.check("rm notes.txt").is_ok());
//! assert!(matches!(guard.check("ls; rm -rf /"), Err(ShellRejection::Metacharacter { .. })));
//! assert!(matches!(guard.check("/usr/bin/sudo ls"), Err(ShellRejection::Denied { .. })));
//! assert!(matches!(guard.check("FOO=bar ls"), Err(ShellRejection::EnvAssignment { .. })));
//! assert!(matches!(guard.check("curl example.com"), Err(ShellRejection::NotAllowed { .. })));
//! assert!(matches!(guard.check("python3 -c 1"), Err(ShellRejection::Launcher { .. })));
//! # Ok::<(), ShellRejection>(())
//! ```
//!
//! Inside a tool, a rejection becomes an invalid-input [`ToolError`](rein_tool::ToolError) with `?`:
//!
//! ```
//! use rein_tools::shell::ShellGuard;
//! use rein_tool::ToolError;
//! use serde_json::{Value, json};
//!
//! fn plan_command(guard: &ShellGuard, input: &Value) -> Result<Vec<String>, ToolError> {
//!     let line = input["command"].as_str().ok_or_else(|| ToolError::invalid_input("`command` must be a string"))?;
//!     Ok(guard.check(line)?.into_words()) // then run it with std::process::Command, no shell
//! }
//! let guard = ShellGuard::new(["ls"], Vec::<&str>::new()).allow_launchers(["git"]);
//! assert_eq!(plan_command(&guard, &json!({"command": "git status"}))?, ["git", "status"]);
//! assert!(plan_command(&guard, &json!({"command": "git status | sh"})).is_err());
//! // Named among the programs, a launcher is still refused.
//! let guard = ShellGuard::new(["git"], Vec::<&str>::new());
//! assert!(plan_command(&guard, &json!({"command": "git status"})).is_err());
//! # Ok::<(), ToolError>(())
//! ```

mod error;
mod guard;
mod isolate;
mod launcher;
mod limit;
mod resolve;
mod run;
mod sandbox;
mod spawn;

pub use error::ShellError;
pub use guard::{Argv, METACHARACTERS, ShellGuard, ShellRejection};
pub use isolate::{Isolation, IsolationError};
pub use launcher::{LAUNCHERS, is_launcher};
pub use limit::ProcessLimitError;
pub use run::{DEFAULT_ENV, ShellConfig, ShellRun};
pub use sandbox::SandboxError;
