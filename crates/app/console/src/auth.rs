//! Operators and their tokens: a tokens file maps each operator's name to the SHA-256 of
//! their token, so the name the ledger records is the token's, never typed in a form.
//! Tokens are compared in constant time, and every form carries a CSRF value tied to the
//! operator's token and this server's secret.

use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// The longest operator name a tokens file may hold.
const MAX_NAME: usize = 64;

/// A named operator, as a valid token identifies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    name: String,
    /// The hex SHA-256 of the token (the CSRF value is derived from it).
    token_hash: String,
}

impl Operator {
    /// The operator's name, as the tokens file gives it; the ledger records it.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Why a tokens file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokensError {
    /// The file cannot be read or written.
    #[error("cannot use tokens file {path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the filesystem said.
        reason: String,
    },
    /// A line is not `NAME SHA256-HEX`.
    #[error(
        "tokens file {path}, line {line}: {why}; each line is `NAME SHA256-HEX` (name: letters, digits, `.`, `_`, `-`, at most 64; the hash of the token in 64 lowercase hex digits), `#` starts a comment"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The file names no operator.
    #[error(
        "tokens file {path} names no operator; add a line `NAME SHA256-HEX`, or remove the file and a token is generated at start"
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The system's random source failed.
    #[error("cannot generate a token: the system's random source failed: {0}")]
    Random(String),
}

/// The operators a console accepts: names and the hashes of their tokens. The tokens
/// themselves are never kept.
#[derive(Clone, Default)]
pub struct Tokens {
    operators: Vec<Operator>,
}

impl fmt::Debug for Tokens {
    /// Names only: even token hashes stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field(
                "operators",
                &self.operators.iter().map(|o| &o.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A token generated for an operator, shown once when it is made.
pub struct NewToken {
    /// The operator it is for.
    pub name: String,
    /// The token itself: give it to the operator; it is never stored.
    pub token: String,
}

impl fmt::Debug for NewToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewToken")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl Tokens {
    /// No operators: every change is refused.
    #[must_use]
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether no operator is known.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.operators.is_empty()
    }

    /// Adds operator `name` with `token`, for a console built in code.
    ///
    /// # Errors
    /// [`TokensError::Malformed`] for a name outside the allowed characters.
    pub fn with(mut self, name: &str, token: &str) -> Result<Self, TokensError> {
        check_name(name).map_err(|why| TokensError::Malformed {
            path: PathBuf::from("(in code)"),
            line: 0,
            why,
        })?;
        self.operators.push(Operator {
            name: name.to_owned(),
            token_hash: hash_hex(token.as_bytes()),
        });
        Ok(self)
    }

    /// A console with one operator `name` and a new random token, kept in memory only.
    ///
    /// # Errors
    /// [`TokensError::Random`] when the system has no random source.
    pub fn generate(name: &str) -> Result<(Self, NewToken), TokensError> {
        let token = random_token()?;
        let tokens = Self::none().with(name, &token)?;
        Ok((
            tokens,
            NewToken {
                name: name.to_owned(),
                token,
            },
        ))
    }

    /// Reads the tokens file at `path`; when there is none, writes one with operator
    /// `name` and a new token (owner-only permissions on Unix) and returns that token so
    /// it can be shown once.
    ///
    /// # Errors
    /// [`TokensError`] for an unreadable or malformed file, or one that cannot be written.
    pub fn load_or_create(
        path: &Path,
        name: &str,
    ) -> Result<(Self, Option<NewToken>), TokensError> {
        let io = |e: std::io::Error| TokensError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        match std::fs::read_to_string(path) {
            Ok(text) => Ok((Self::parse(path, &text)?, None)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (tokens, new) = Self::generate(name)?;
                let text = format!(
                    "# rein console operators: NAME SHA256-HEX-OF-TOKEN, one a line\n{name} {}\n",
                    tokens.operators[0].token_hash
                );
                write_private(path, &text).map_err(io)?;
                Ok((tokens, Some(new)))
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Parses a tokens file's `text` (`path` names it in errors).
    ///
    /// # Errors
    /// [`TokensError::Malformed`] naming the first bad line; [`TokensError::Empty`].
    pub fn parse(path: &Path, text: &str) -> Result<Self, TokensError> {
        let mut operators = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let malformed = |why: String| TokensError::Malformed {
                path: path.to_path_buf(),
                line: i + 1,
                why,
            };
            let mut words = line.split_whitespace();
            let (Some(name), Some(hash), None) = (words.next(), words.next(), words.next()) else {
                return Err(malformed("it does not have exactly two words".to_owned()));
            };
            check_name(name).map_err(malformed)?;
            if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(malformed(format!(
                    "`{}` is not a SHA-256 in lowercase hex",
                    hash.chars().take(70).collect::<String>()
                )));
            }
            if operators.iter().any(|o: &Operator| o.name == name) {
                return Err(malformed(format!("operator `{name}` is named twice")));
            }
            operators.push(Operator {
                name: name.to_owned(),
                token_hash: hash.to_owned(),
            });
        }
        if operators.is_empty() {
            return Err(TokensError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(Self { operators })
    }

    /// The operator whose token is `token`. Every known hash is compared, each in constant
    /// time, so the time taken says nothing about which operator, or how much, matched.
    #[must_use]
    pub fn operator(&self, token: &str) -> Option<&Operator> {
        let presented = hash_hex(token.as_bytes());
        let mut found = None;
        for operator in &self.operators {
            if constant_time_eq(presented.as_bytes(), operator.token_hash.as_bytes()) {
                found = Some(operator);
            }
        }
        found
    }
}

/// The CSRF value of `operator` on a server with `secret`: forms carry it, and a change
/// whose form does not is refused. It is derived, so nothing is stored per session.
pub(crate) fn csrf_value(secret: &[u8; 32], operator: &Operator) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"rein-console-csrf\0");
    hasher.update(secret);
    hasher.update(operator.token_hash.as_bytes());
    hex(&hasher.finalize())
}

/// Whether `given` is `operator`'s CSRF value, compared in constant time.
pub(crate) fn csrf_ok(secret: &[u8; 32], operator: &Operator, given: &str) -> bool {
    constant_time_eq(csrf_value(secret, operator).as_bytes(), given.as_bytes())
}

/// A new server secret (for CSRF values).
pub(crate) fn secret() -> Result<[u8; 32], TokensError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| TokensError::Random(e.to_string()))?;
    Ok(bytes)
}

/// Equal lengths and equal bytes, in time that depends on the length only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes as hex.
fn random_token() -> Result<String, TokensError> {
    Ok(hex(&secret()?))
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not an operator name",
            name.chars().take(70).collect::<String>()
        ))
    }
}

fn hash_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Writes `text` to a new file at `path`, readable by its owner only where that can be said.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// The name of the cookie that carries an operator's session after `/login`.
pub(crate) const COOKIE: &str = "rein_console_session";

/// The session value of `operator` on a server with `secret`: what the sign-in cookie holds
/// instead of the token, so a cookie that leaks (a proxy's log, a shared machine) is not the
/// token itself and dies with the server's secret at its restart. Derived like the CSRF
/// value, so nothing is stored per session.
pub(crate) fn session_value(secret: &[u8; 32], operator: &Operator) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"rein-console-session\0");
    hasher.update(secret);
    hasher.update(operator.token_hash.as_bytes());
    hex(&hasher.finalize())
}

impl Tokens {
    /// The operator whose session value (on a server with `secret`) is `session`, every
    /// one compared in constant time.
    pub(crate) fn session(&self, secret: &[u8; 32], session: &str) -> Option<&Operator> {
        let mut found = None;
        for operator in &self.operators {
            if constant_time_eq(
                session_value(secret, operator).as_bytes(),
                session.as_bytes(),
            ) {
                found = Some(operator);
            }
        }
        found
    }
}

/// The operator whose token (`Authorization: Bearer …`) or session cookie the request
/// carries.
pub(crate) fn operator_of(
    state: &crate::State,
    headers: &axum::http::HeaderMap,
) -> Option<Operator> {
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let cookie = headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='));
    match (bearer, cookie) {
        (Some(token), _) => state.tokens.operator(token.trim()).cloned(),
        (None, Some(session)) => state.tokens.session(&state.secret, session.trim()).cloned(),
        (None, None) => None,
    }
}

/// The CSRF value forms of `operator` carry on this server.
pub(crate) fn csrf_for(state: &crate::State, operator: &Operator) -> String {
    csrf_value(&state.secret, operator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_operator_and_nothing_else_does() {
        let tokens = Tokens::none()
            .with("alice", "a-token")
            .and_then(|t| t.with("bob", "b-token"))
            .expect("valid names");
        assert_eq!(
            tokens.operator("a-token").map(Operator::name),
            Some("alice")
        );
        assert_eq!(tokens.operator("b-token").map(Operator::name), Some("bob"));
        assert!(tokens.operator("a-toke").is_none());
        assert!(tokens.operator("").is_none());
    }

    #[test]
    fn a_malformed_line_is_named() {
        let path = Path::new("tokens");
        let err = Tokens::parse(path, "# ok\nalice abc\n").expect_err("short hash");
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = Tokens::parse(path, "<b> 0000\n").expect_err("bad name");
        assert!(err.to_string().contains("not an operator name"), "{err}");
        assert!(matches!(
            Tokens::parse(path, "# nothing\n"),
            Err(TokensError::Empty { .. })
        ));
    }

    #[test]
    fn csrf_values_belong_to_one_operator_on_one_server() {
        let tokens = Tokens::none()
            .with("alice", "a")
            .and_then(|t| t.with("bob", "b"))
            .expect("valid");
        let (alice, bob) = (&tokens.operators[0], &tokens.operators[1]);
        let one = [1u8; 32];
        let two = [2u8; 32];
        let value = csrf_value(&one, alice);
        assert!(csrf_ok(&one, alice, &value));
        assert!(!csrf_ok(&one, bob, &value));
        assert!(!csrf_ok(&two, alice, &value));
        assert!(!csrf_ok(&one, alice, ""));
    }
}
