//! libpq's `sslmode` and `sslrootcert`, taken out of a store URL before tokio-postgres
//! parses the rest: it knows neither `verify-ca`, `verify-full` nor `sslrootcert`, and
//! refuses a parameter it does not know.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use crate::PgError;

/// How the stores use TLS to the database: libpq's `sslmode`, given in the store URL
/// (`?sslmode=verify-full`) or its `key=value` form. Like libpq, a unix socket never uses
/// TLS, whatever the mode.
///
/// ```
/// use rein_postgres::SslMode;
///
/// assert_eq!("verify-full".parse::<SslMode>()?, SslMode::VerifyFull);
/// assert_eq!(SslMode::default(), SslMode::Prefer);
/// assert!("verify_full".parse::<SslMode>().is_err());
/// # Ok::<(), rein_postgres::PgError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, plain otherwise (libpq's default). The certificate is
    /// not verified unless `sslrootcert` is given (then its chain is, as with `VerifyCa`).
    #[default]
    Prefer,
    /// TLS, or no connection. The certificate is not verified unless `sslrootcert` is given
    /// (then its chain is, as with `VerifyCa`).
    Require,
    /// TLS, the server's certificate chain verified against `sslrootcert` (or, without it,
    /// the system's root certificates); the host name is not checked.
    VerifyCa,
    /// TLS, the server's certificate chain verified and the host name checked against it.
    VerifyFull,
}

impl SslMode {
    /// The mode as libpq spells it: `disable`, `prefer`, `require`, `verify-ca`, `verify-full`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SslMode {
    type Err = PgError;

    /// Parses libpq's spelling.
    ///
    /// # Errors
    /// [`PgError::InvalidTls`] naming `sslmode` and the modes there are.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Self::Disable,
            Self::Prefer,
            Self::Require,
            Self::VerifyCa,
            Self::VerifyFull,
        ]
        .into_iter()
        .find(|mode| mode.as_str() == s)
        .ok_or_else(|| {
            PgError::invalid_tls(
                "sslmode",
                format!(
                    "{s:?} is not a mode; write one of disable, prefer, require, verify-ca \
                     or verify-full"
                ),
            )
        })
    }
}

/// The TLS parameters of a store URL, as written (percent-decoded in the URL form).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsParams {
    /// `sslmode`.
    pub(crate) sslmode: Option<String>,
    /// `sslrootcert`.
    pub(crate) sslrootcert: Option<String>,
}

impl TlsParams {
    /// Keeps `value` as the parameter `key` names, if it is one of the TLS parameters.
    fn take(&mut self, key: &str, value: String) {
        match key {
            "sslmode" => self.sslmode = Some(value),
            "sslrootcert" => self.sslrootcert = Some(value),
            _ => {}
        }
    }
}

/// The TLS parameter `key` names, if it names one.
///
/// # Errors
/// [`PgError::InvalidTls`] for libpq's TLS parameters this does not support, so that one
/// is refused by name rather than as an unknown option.
fn tls_parameter(key: &str) -> Result<Option<&'static str>, PgError> {
    const UNSUPPORTED: [&str; 5] = ["sslcert", "sslkey", "sslpassword", "sslcrl", "sslcrldir"];
    if let Some(parameter) = UNSUPPORTED.into_iter().find(|p| *p == key) {
        return Err(PgError::invalid_tls(
            parameter,
            "client certificates and certificate revocation lists are not supported; remove \
             it (sslmode and sslrootcert are)"
                .to_owned(),
        ));
    }
    Ok(["sslmode", "sslrootcert"]
        .into_iter()
        .find(|parameter| *parameter == key))
}

/// Splits the TLS parameters off `url`: the rest, for tokio-postgres to parse, and them.
/// A string this cannot read is given back whole, for tokio-postgres to say what is wrong.
///
/// # Errors
/// [`PgError::InvalidTls`] when a parameter's value is not UTF-8 once percent-decoded, or
/// for a TLS parameter that is not supported (`sslcert`, `sslkey`, …).
pub(crate) fn split_tls_params(url: &str) -> Result<(Cow<'_, str>, TlsParams), PgError> {
    match ["postgres://", "postgresql://"]
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
    {
        Some(rest) => split_url(url, url.len() - rest.len()),
        None => split_key_values(url),
    }
}

/// The URL form: the query after the host and database (found as tokio-postgres finds
/// it: credentials end at the first `@`), minus its TLS parameters.
fn split_url(url: &str, after_scheme: usize) -> Result<(Cow<'_, str>, TlsParams), PgError> {
    let rest = &url[after_scheme..];
    let host_start = after_scheme + rest.find('@').map_or(0, |at| at + 1);
    let Some(question) = url[host_start..].find('?') else {
        return Ok((Cow::Borrowed(url), TlsParams::default()));
    };
    let (base, query) = url.split_at(host_start + question);
    let mut params = TlsParams::default();
    let mut kept = Vec::new();
    for piece in query[1..].split('&') {
        let (key, value) = piece.split_once('=').unwrap_or((piece, ""));
        let key = percent_decode(key).unwrap_or_default();
        if let Some(parameter) = tls_parameter(&key)? {
            let value = percent_decode(value).ok_or_else(|| {
                PgError::invalid_tls(
                    parameter,
                    "it is not UTF-8 once percent-decoded; percent-encode its bytes as UTF-8"
                        .to_owned(),
                )
            })?;
            params.take(parameter, value);
        } else {
            kept.push(piece);
        }
    }
    if params == TlsParams::default() {
        return Ok((Cow::Borrowed(url), params));
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((Cow::Owned(rest), params))
}

/// Decodes `%XX` escapes (a `%` not followed by two hex digits stays as it is, as in
/// tokio-postgres); `None` when the bytes are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&hi), Some(&lo)) if hex(hi).is_some() && hex(lo).is_some() => {
                let value = hex(hi).unwrap_or(0) * 16 + hex(lo).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(0));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The `key=value` form, read as tokio-postgres reads it (values bare or single-quoted,
/// `\` escaping the next character), written back without the TLS parameters, each value
/// quoted.
fn split_key_values(s: &str) -> Result<(Cow<'_, str>, TlsParams), PgError> {
    let Some(pairs) = key_values(s) else {
        return Ok((Cow::Borrowed(s), TlsParams::default()));
    };
    let mut params = TlsParams::default();
    let mut kept = Vec::new();
    for (key, value) in pairs {
        if tls_parameter(key)?.is_some() {
            params.take(key, value);
        } else {
            let quoted = value.replace('\\', "\\\\").replace('\'', "\\'");
            kept.push(format!("{key}='{quoted}'"));
        }
    }
    if params == TlsParams::default() {
        return Ok((Cow::Borrowed(s), params));
    }
    Ok((Cow::Owned(kept.join(" ")), params))
}

/// The `key=value` pairs of `s`, or `None` when it is not well formed.
fn key_values(s: &str) -> Option<Vec<(&str, String)>> {
    let mut pairs = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let key_end = rest.find(|c: char| c.is_whitespace() || c == '=')?;
        let key = &rest[..key_end];
        if key.is_empty() {
            return None;
        }
        rest = rest[key_end..].trim_start().strip_prefix('=')?.trim_start();
        let (value, after) = value(rest)?;
        pairs.push((key, value));
        rest = after.trim_start();
    }
    Some(pairs)
}

/// One value at the start of `s` and what follows it.
fn value(s: &str) -> Option<(String, &str)> {
    let (quoted, body) = match s.strip_prefix('\'') {
        Some(body) => (true, body),
        None => (false, s),
    };
    let mut value = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' if quoted => return Some((value, &body[i + 1..])),
            c if c.is_whitespace() && !quoted => return Some((value, &body[i..])),
            '\\' => value.extend(chars.next().map(|(_, escaped)| escaped)),
            c => value.push(c),
        }
    }
    // The end of the string: it closes a bare value, never a quoted one.
    (!quoted && !value.is_empty()).then_some((value, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, Option<String>, Option<String>) {
        let (rest, params) = split_tls_params(url).unwrap();
        (rest.into_owned(), params.sslmode, params.sslrootcert)
    }

    #[test]
    fn every_libpq_mode_parses_and_prints_as_written() {
        for name in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            assert_eq!(name.parse::<SslMode>().unwrap().to_string(), name);
        }
    }

    #[test]
    fn an_unknown_mode_names_the_parameter_and_the_modes_there_are() {
        for bad in ["verify_full", "VERIFY-FULL", "allow-ish", ""] {
            let message = bad.parse::<SslMode>().unwrap_err().to_string();
            assert!(message.contains("sslmode"), "{message}");
            assert!(message.contains("verify-ca or verify-full"), "{message}");
        }
    }

    #[test]
    fn the_url_form_loses_only_its_tls_parameters() {
        assert_eq!(
            split("postgres://u:p@h:5433/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem"),
            (
                "postgres://u:p@h:5433/db".into(),
                Some("verify-full".into()),
                Some("/etc/ca.pem".into())
            )
        );
        assert_eq!(
            split("postgresql://u@h/db?connect_timeout=3&sslmode=require&application_name=x"),
            (
                "postgresql://u@h/db?connect_timeout=3&application_name=x".into(),
                Some("require".into()),
                None
            )
        );
    }

    #[test]
    fn a_question_mark_in_the_password_is_not_the_query() {
        assert_eq!(
            split("postgres://u:p?w&sslmode=x@h/db?sslmode=disable"),
            (
                "postgres://u:p?w&sslmode=x@h/db".into(),
                Some("disable".into()),
                None
            )
        );
    }

    #[test]
    fn a_url_without_tls_parameters_is_given_back_as_it_is() {
        for url in [
            "postgres://u:p@h/db",
            "postgres://u:p@h/db?connect_timeout=3",
            "postgres://u:p@%2Ftmp%2Fpg/db",
        ] {
            assert!(matches!(
                split_tls_params(url).unwrap().0,
                Cow::Borrowed(same) if same == url
            ));
        }
    }

    #[test]
    fn a_tls_value_that_is_not_utf8_names_its_parameter() {
        let err = split_tls_params("postgres://u:secret@h/db?sslrootcert=%FF").unwrap_err();
        let message = err.to_string();
        assert!(message.contains("sslrootcert") && !message.contains("secret"));
    }

    #[test]
    fn the_key_value_form_loses_only_its_tls_parameters() {
        assert_eq!(
            split(
                "host=db user=rein password='it\\'s' sslmode = verify-ca sslrootcert='/a b/ca.pem'"
            ),
            (
                "host='db' user='rein' password='it\\'s'".into(),
                Some("verify-ca".into()),
                Some("/a b/ca.pem".into())
            )
        );
        let (rest, ..) = split("host=db user=rein password='it\\'s' sslmode=require");
        let config: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(config.get_password(), Some(&b"it's"[..]));
    }

    #[test]
    fn client_certificates_are_refused_by_name_in_either_form() {
        for url in [
            "postgres://u:secret@h/db?sslmode=require&sslcert=%2Fc.pem",
            "host=h user=u password=secret sslkey=/k.pem",
        ] {
            let err = split_tls_params(url).unwrap_err();
            let message = err.to_string();
            assert!(
                matches!(
                    err,
                    PgError::InvalidTls {
                        parameter: "sslcert" | "sslkey",
                        ..
                    }
                ),
                "{message}"
            );
            assert!(message.contains("not supported") && !message.contains("secret"));
        }
    }

    #[test]
    fn a_key_value_string_this_cannot_read_is_left_to_tokio_postgres() {
        for s in [
            "host=db sslmode='unterminated",
            "host=db =x",
            "host",
            "host=db user=",
        ] {
            assert_eq!(split(s), (s.into(), None, None));
        }
    }
}
