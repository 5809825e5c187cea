//! OAuth 2.1 for streamable HTTP servers, as the MCP authorization specification describes
//! it: discovery (protected resource metadata, then the authorization server's), dynamic
//! client registration, the authorization code flow with PKCE, and token refresh.
//!
//! The protocol is rmcp's (`rmcp::transport::auth`); this module decides where tokens live
//! and when a person is needed. Tokens live in a file of their own ([`OAuth::token_file`]),
//! created with mode 0600 in a folder of mode 0700 and refused when anyone else may read
//! it; never in a ledger, a snapshot or the data directory. [`login`] is the interactive
//! first step (it listens on a loopback port for the redirect); connecting afterwards is
//! headless: the access token is read from the file, and refreshed (and the file rewritten)
//! when it is about to expire, so a worker needs no person.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::config::{ServerConfig, ServerName, Transport};
use crate::oauth_config::OAuth;
use crate::oauth_error::OAuthError;

/// The access token to send to `config`'s server: read from its token file, refreshed
/// first when it is about to expire (the file is rewritten).
///
/// # Errors
/// [`OAuthError::LoginRequired`] when there is no token or its refresh is refused; the
/// others when the configuration, the file or the protocol fails.
pub(crate) async fn access_token(config: &ServerConfig) -> Result<Option<String>, OAuthError> {
    let Some((url, oauth)) = checked(config)? else {
        return Ok(None);
    };
    let server = config.name();
    let store = TokenFile::open(server, oauth.token_file())?;
    let mut manager = manager(server, url).await?;
    manager.set_credential_store(store);
    let found = manager
        .initialize_from_store()
        .await
        .map_err(|e| protocol(server, oauth, &e))?;
    if !found {
        return Err(login_required(server, oauth));
    }
    manager
        .get_access_token()
        .await
        .map(Some)
        .map_err(|e| protocol(server, oauth, &e))
}

/// The URL and the OAuth settings of `config`, if it uses OAuth: refused on a stdio server,
/// and when the token file lies inside one of the server's roots (the scenario's workspace,
/// where an agent's file tools could read it).
fn checked(config: &ServerConfig) -> Result<Option<(&str, &OAuth)>, OAuthError> {
    let Some(oauth) = config.oauth() else {
        return Ok(None);
    };
    let server = config.name();
    let Transport::Http { url, .. } = config.transport() else {
        return Err(OAuthError::NotHttp {
            server: server.clone(),
        });
    };
    let file = resolved(oauth.token_file());
    if let Some(root) = config
        .roots()
        .iter()
        .find(|root| file.starts_with(resolved(root)))
    {
        return Err(OAuthError::InsideRoot {
            server: server.clone(),
            token_file: oauth.token_file().to_path_buf(),
            root: root.clone(),
        });
    }
    Ok(Some((url, oauth)))
}

/// `path` with symbolic links resolved as far as it exists (a token file may not exist
/// yet: its folder decides).
fn resolved(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut at = path.to_path_buf();
    loop {
        if let Ok(real) = at.canonicalize() {
            return missing.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.file_name().map(ToOwned::to_owned), at.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                at = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The interactive first login to `config`'s server: discovers its authorization server,
/// registers rein as a client, hands the authorization URL to `show` (print it, open a
/// browser), waits for the redirect on a loopback port, exchanges the code (with PKCE) and
/// saves the tokens in the token file.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use rein_mcp::{OAuth, ServerConfig};
/// let config = ServerConfig::http("docs".parse()?, "https://mcp.example.com/mcp")
///     .with_oauth(OAuth::new("/home/me/.config/rein/tokens/docs.json"));
/// rein_mcp::login(&config, |page| eprintln!("open {page} to log in")).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`OAuthError`]: the server has no `oauth` or no URL, the token file lies inside its
/// roots or cannot be written, the protocol fails, the redirect carries an error or a
/// state that does not match.
pub async fn login(config: &ServerConfig, show: impl FnOnce(&str)) -> Result<(), OAuthError> {
    let server = config.name();
    let Some((url, oauth)) = checked(config)? else {
        return Err(OAuthError::NoOAuth {
            server: server.clone(),
        });
    };
    let store = TokenFile::open(server, oauth.token_file())?;
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| login_failed(server, format!("could not listen for the redirect: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| login_failed(server, e.to_string()))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let mut manager = manager(server, url).await?;
    manager.set_credential_store(store);
    let metadata = manager
        .resolve_metadata()
        .await
        .map_err(|e| protocol(server, oauth, &e))?;
    manager.set_metadata(metadata.metadata);
    let mut request = AuthorizationRequest::new(redirect_uri.clone()).with_client_name("rein");
    if !oauth.scopes().is_empty() {
        request = request.with_scopes(oauth.scopes().iter().cloned());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| protocol(server, oauth, &e))?;
    show(session.get_authorization_url());
    let callback = redirect(server, &listener, &redirect_uri).await?;
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|e| protocol(server, oauth, &e))?;
    Ok(())
}

async fn manager(server: &ServerName, url: &str) -> Result<AuthorizationManager, OAuthError> {
    AuthorizationManager::new(url)
        .await
        .map_err(|e| OAuthError::Protocol {
            server: server.clone(),
            reason: describe(&e),
        })
}

/// The largest redirect request read: a URL with a code and a state is far smaller.
const MAX_REDIRECT: usize = 16 * 1024;

/// Waits for the browser's redirect to `redirect_uri` and answers it; the full callback
/// URL. Requests for other paths (a browser's favicon) are answered 404 and waited past.
async fn redirect(
    server: &ServerName,
    listener: &TcpListener,
    redirect_uri: &str,
) -> Result<String, OAuthError> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| login_failed(server, format!("the redirect: {e}")))?;
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REDIRECT {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|e| login_failed(server, format!("the redirect: {e}")))?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_default();
        if !target.starts_with("/callback") {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let body = "rein is logged in; you can close this page.";
        let _ = stream
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await;
        let base = redirect_uri.trim_end_matches("/callback");
        let callback = format!("{base}{target}");
        if let Some(error) = query_value(&callback, "error") {
            return Err(login_failed(
                server,
                format!("the authorization server answered `{error}`"),
            ));
        }
        return Ok(callback);
    }
}

fn query_value(url: &str, key: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.to_owned())
    })
}

fn login_required(server: &ServerName, oauth: &OAuth) -> OAuthError {
    OAuthError::LoginRequired {
        server: server.clone(),
        token_file: oauth.token_file().to_path_buf(),
    }
}

fn login_failed(server: &ServerName, reason: String) -> OAuthError {
    OAuthError::Login {
        server: server.clone(),
        reason,
    }
}

/// A refusal that a new login cures is [`OAuthError::LoginRequired`]; the rest keep rmcp's
/// words (which hold no token).
fn protocol(server: &ServerName, oauth: &OAuth, error: &AuthError) -> OAuthError {
    match error {
        AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => {
            login_required(server, oauth)
        }
        other => OAuthError::Protocol {
            server: server.clone(),
            reason: describe(other),
        },
    }
}

fn describe(error: &AuthError) -> String {
    error.to_string()
}

/// The token file as rmcp's credential store: read on every token request (so a login in
/// another process is seen), written whole through a temporary file and a rename, mode
/// 0600 in a folder of mode 0700. It holds no token: tokens are read when asked for.
#[derive(Debug)]
struct TokenFile {
    server: ServerName,
    path: PathBuf,
}

impl TokenFile {
    /// The store of `path`, refused when the file exists and others may read it.
    fn open(server: &ServerName, path: &Path) -> Result<Self, OAuthError> {
        let store = Self {
            server: server.clone(),
            path: path.to_path_buf(),
        };
        store.check_mode()?;
        Ok(store)
    }

    fn io(&self, source: std::io::Error) -> OAuthError {
        OAuthError::TokenFile {
            server: self.server.clone(),
            token_file: self.path.clone(),
            source,
        }
    }

    #[cfg(unix)]
    fn check_mode(&self) -> Result<(), OAuthError> {
        use std::os::unix::fs::PermissionsExt as _;
        match std::fs::metadata(&self.path) {
            Ok(meta) => {
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 == 0 {
                    Ok(())
                } else {
                    Err(OAuthError::LooseTokenFile {
                        server: self.server.clone(),
                        token_file: self.path.clone(),
                        mode,
                    })
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io(e)),
        }
    }

    #[cfg(not(unix))]
    fn check_mode(&self) -> Result<(), OAuthError> {
        Ok(())
    }

    fn read(&self) -> Result<Option<StoredCredentials>, OAuthError> {
        self.check_mode()?;
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                self.io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("not a token file rein wrote ({e}); delete it and log in again"),
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io(e)),
        }
    }

    fn write(&self, credentials: Option<&StoredCredentials>) -> Result<(), OAuthError> {
        let Some(credentials) = credentials else {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(e)),
                _ => Ok(()),
            };
        };
        let folder = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."));
        create_private_dir(folder).map_err(|e| self.io(e))?;
        let bytes = serde_json::to_vec(credentials)
            .map_err(|e| self.io(std::io::Error::other(e.to_string())))?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(".rein-token");
        #[cfg(unix)]
        builder.permissions(private_file());
        let mut file = builder.tempfile_in(folder).map_err(|e| self.io(e))?;
        file.write_all(&bytes).map_err(|e| self.io(e))?;
        file.as_file().sync_all().map_err(|e| self.io(e))?;
        file.persist(&self.path).map_err(|e| self.io(e.error))?;
        Ok(())
    }
}

#[cfg(unix)]
fn private_file() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::Permissions::from_mode(0o600)
}

fn create_private_dir(folder: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(folder)
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read()
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(Some(&credentials))
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.write(None)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ServerName {
        "docs".parse().expect("a name")
    }

    #[test]
    fn a_query_value_is_found_by_its_key() {
        let url = "http://127.0.0.1:1/callback?code=abc&state=xyz";
        assert_eq!(query_value(url, "state").as_deref(), Some("xyz"));
        assert_eq!(query_value(url, "error"), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_may_read_is_refused_and_one_rein_writes_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("tokens").join("docs.json");
        let store = TokenFile::open(&server(), &path).expect("no file yet");
        let credentials: StoredCredentials =
            serde_json::from_value(serde_json::json!({"client_id": "c1", "token_response": null}))
                .expect("credentials");
        store.write(Some(&credentials)).expect("written");
        let mode = std::fs::metadata(&path)
            .expect("the file")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let folder = std::fs::metadata(path.parent().expect("a folder"))
            .expect("the folder")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(folder, 0o700);
        assert_eq!(store.read().expect("read").expect("some").client_id, "c1");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = TokenFile::open(&server(), &path).expect_err("a loose file");
        assert!(matches!(
            refused,
            OAuthError::LooseTokenFile { mode: 0o644, .. }
        ));
        assert!(refused.to_string().contains("chmod 600"), "{refused}");
    }

    #[test]
    fn a_token_file_that_is_not_json_says_to_log_in_again() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("docs.json");
        std::fs::write(&path, "not json").expect("written");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        let store = TokenFile::open(&server(), &path).expect("private");
        let error = store.read().expect_err("garbage");
        assert!(error.to_string().contains("log in again"), "{error}");
    }
}
