//! What a TLS connection to the database verifies, from `sslmode` and `sslrootcert`: the
//! rustls configuration, with the crypto provider named (aws-lc-rs, the one reqwest uses)
//! rather than a process-wide default that may not be installed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::tls::RustlsConnect;
use crate::{PgError, SslMode};

/// The largest `sslrootcert` file read: a system's whole bundle is a few hundred KiB.
const MAX_ROOT_FILE: u64 = 4 * 1024 * 1024;

/// Where the certificate authorities a server's certificate is verified against come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Roots {
    /// A PEM file (`sslrootcert=PATH`).
    File(PathBuf),
    /// The system's root certificates (`sslrootcert=system`, as in libpq 16).
    System,
}

impl Roots {
    /// `sslrootcert` as written: `system`, or a path.
    pub(crate) fn parse(value: &str) -> Result<Self, PgError> {
        match value {
            "" => Err(PgError::invalid_tls(
                "sslrootcert",
                "it is empty; give the path of a PEM file of certificate authorities, or system"
                    .to_owned(),
            )),
            "system" => Ok(Self::System),
            path => Ok(Self::File(PathBuf::from(path))),
        }
    }
}

/// The TLS settings of a store URL, and the connector made from them (roots read once).
#[derive(Clone, Debug)]
pub(crate) struct Tls {
    pub(crate) mode: SslMode,
    pub(crate) roots: Option<Roots>,
    pub(crate) connector: RustlsConnect,
}

impl Tls {
    /// Reads the roots `mode` needs and makes the connector.
    ///
    /// # Errors
    /// [`PgError::InvalidTls`] naming `sslrootcert` when its file cannot be read or holds
    /// no certificate, or when the system has no root certificates to verify against.
    pub(crate) fn new(mode: SslMode, roots: Option<Roots>) -> Result<Self, PgError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        // libpq: with a root certificate given, prefer and require verify the chain too.
        let verifier: Option<Arc<dyn ServerCertVerifier>> = match (mode, &roots) {
            (SslMode::Disable, _) => None,
            (SslMode::Prefer | SslMode::Require, None) => {
                Some(Arc::new(AnyCertificate(Arc::clone(&provider))))
            }
            (SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, roots) => Some(Arc::new(
                ChainOnly(webpki(load(roots.as_ref(), mode)?, &provider)?),
            )),
            (SslMode::VerifyFull, roots) => Some(webpki(load(roots.as_ref(), mode)?, &provider)?),
        };
        let config = verifier
            .map(|verifier| -> Result<_, PgError> {
                let mut config = ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| PgError::invalid_tls("sslmode", e.to_string()))?
                    .dangerous()
                    .with_custom_certificate_verifier(verifier)
                    .with_no_client_auth();
                // What libpq sends since PostgreSQL 17 (which requires it for direct TLS);
                // older servers ignore it.
                config.alpn_protocols = vec![b"postgresql".to_vec()];
                Ok(Arc::new(config))
            })
            .transpose()?;
        let trusted = match &roots {
            Some(Roots::File(path)) => {
                format!("the certificates of sslrootcert {}", path.display())
            }
            Some(Roots::System) => "the system's root certificates (sslrootcert=system)".to_owned(),
            None => "the system's root certificates (no sslrootcert was given)".to_owned(),
        };
        Ok(Self {
            mode,
            roots,
            connector: RustlsConnect::new(config, trusted.into()),
        })
    }
}

fn webpki(
    roots: RootCertStore,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, PgError> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
        .build()
        .map_err(|e| PgError::invalid_tls("sslrootcert", e.to_string()))
}

/// The certificate authorities to verify against: `roots`, or the system's without one.
fn load(roots: Option<&Roots>, mode: SslMode) -> Result<RootCertStore, PgError> {
    match roots {
        Some(Roots::File(path)) => from_file(path),
        Some(Roots::System) => system("sslrootcert=system"),
        None => system(&format!("sslmode={mode} without sslrootcert")),
    }
}

fn from_file(path: &Path) -> Result<RootCertStore, PgError> {
    let shown = path.display();
    let invalid = |reason: String| PgError::invalid_tls("sslrootcert", reason);
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_ROOT_FILE + 1).read_to_end(&mut pem))
        .map_err(|e| invalid(format!("{shown} cannot be read: {e}")))?;
    if pem.len() as u64 > MAX_ROOT_FILE {
        return Err(invalid(format!(
            "{shown} is larger than {MAX_ROOT_FILE} bytes; give a PEM file of certificate \
             authorities"
        )));
    }
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| invalid(format!("{shown} is not a PEM file: {e}")))?;
        store.add(cert).map_err(|e| {
            invalid(format!(
                "{shown} holds a certificate that cannot be a root: {e}"
            ))
        })?;
    }
    if store.is_empty() {
        return Err(invalid(format!(
            "{shown} holds no certificate; give a PEM file with -----BEGIN CERTIFICATE----- \
             blocks"
        )));
    }
    Ok(store)
}

fn system(why: &str) -> Result<RootCertStore, PgError> {
    let found = rustls_native_certs::load_native_certs();
    let mut store = RootCertStore::empty();
    store.add_parsable_certificates(found.certs);
    if store.is_empty() {
        let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(PgError::invalid_tls(
            "sslrootcert",
            format!(
                "{why} verifies against the system's root certificates, and none were found{}; \
                 give the certificate authority's certificate as sslrootcert=PATH",
                if errors.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", errors.join("; "))
                }
            ),
        ));
    }
    Ok(store)
}

/// `prefer` and `require` without a root certificate: the session is encrypted but the
/// server not authenticated (libpq's behaviour). The handshake's signatures are still
/// checked, so the certificate channel binding hashes is the one the server holds a key for.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain is verified, the host name is not. The webpki verifier checks
/// the chain before the name, so a name mismatch is the only failure let through.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
