//! The TLS connector the pool and the queue's `LISTEN` connection connect with: rustls
//! (over tokio-rustls) behind tokio-postgres's `MakeTlsConnect`, with SCRAM channel
//! binding (`tls-server-end-point`), so that a password exchange is bound to the
//! certificate the client saw.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use aws_lc_rs::digest;
use rustls::pki_types::ServerName;
use rustls::{CertificateError, ClientConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// Makes a TLS session per connection from one rustls configuration; without one
/// (`sslmode=disable`, or a unix socket) tokio-postgres never asks for a session.
#[derive(Clone, Default)]
pub(crate) struct RustlsConnect {
    config: Option<Arc<ClientConfig>>,
    /// The certificate authorities trusted, for people (`sslrootcert /etc/ca.pem`).
    trusted: Arc<str>,
}

impl RustlsConnect {
    /// A connector with `config`, or one that never connects (`None`); `trusted` says which
    /// certificate authorities `config` trusts, for the error of a certificate none signed.
    pub(crate) const fn new(config: Option<Arc<ClientConfig>>, trusted: Arc<str>) -> Self {
        Self { config, trusted }
    }
}

impl fmt::Debug for RustlsConnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RustlsConnect")
            .field("tls", &self.config.is_some())
            .field("trusted", &self.trusted)
            .finish()
    }
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = Handshake;
    type Error = TlsError;

    fn make_tls_connect(&mut self, host: &str) -> Result<Handshake, TlsError> {
        // tokio-postgres asks for a handshake before it knows whether it will use one (a
        // unix socket gives an empty host): a host no certificate can name fails only if a
        // handshake is really made.
        let name = ServerName::try_from(host.to_owned()).map_err(|_| {
            TlsError::new(format!(
                "the host {host:?} is not a name or address a certificate can name"
            ))
        });
        Ok(Handshake {
            config: self.config.clone(),
            trusted: Arc::clone(&self.trusted),
            name,
        })
    }
}

/// One connection's TLS handshake, to the host it was made for.
#[derive(Debug)]
pub(crate) struct Handshake {
    config: Option<Arc<ClientConfig>>,
    trusted: Arc<str>,
    name: Result<ServerName<'static>, TlsError>,
}

impl<S> TlsConnect<S> for Handshake
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = TlsError;
    type Future = Pin<Box<dyn Future<Output = Result<RustlsStream<S>, TlsError>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let config = self
                .config
                .ok_or_else(|| TlsError::new("TLS is off (sslmode=disable)".to_owned()))?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(self.name?, stream)
                .await
                .map_err(|e| TlsError::handshake(&e, &self.trusted))?;
            Ok(RustlsStream(stream))
        })
    }
}

/// A connection inside a TLS session.
#[derive(Debug)]
pub(crate) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|cert| server_end_point(cert))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// RFC 5929's `tls-server-end-point`: the server certificate hashed with the hash of its
/// signature algorithm (SHA-256 for MD5 and SHA-1). `None` for an algorithm without one
/// hash (RSA-PSS, Ed25519): the exchange then goes without channel binding, as it would
/// with a server that offers none, instead of failing with a hash the server would not
/// compute.
fn server_end_point(cert: &[u8]) -> Option<Vec<u8>> {
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
    let (certificate, _) = der(cert, SEQUENCE)?;
    let (_, rest) = der(certificate, SEQUENCE)?;
    let (algorithm, _) = der(rest, SEQUENCE)?;
    let (oid, _) = der(algorithm, OBJECT_IDENTIFIER)?;
    let hash = match oid {
        // md5, sha1, sha256 WithRSAEncryption; ecdsa-with-SHA1, ecdsa-with-SHA256
        [
            0x2a,
            0x86,
            0x48,
            0x86,
            0xf7,
            0x0d,
            0x01,
            0x01,
            0x04 | 0x05 | 0x0b,
        ]
        | [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01]
        | [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02] => &digest::SHA256,
        [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c]
        | [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03] => &digest::SHA384,
        [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d]
        | [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04] => &digest::SHA512,
        _ => return None,
    };
    Some(digest::digest(hash, cert).as_ref().to_vec())
}

const SEQUENCE: u8 = 0x30;
const OBJECT_IDENTIFIER: u8 = 0x06;

/// The DER element at the start of `input` if its tag is `tag`: its content and what follows.
fn der(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let octets = usize::from(first & 0x7f);
        if octets == 0 || octets > 4 || rest.len() < octets {
            return None;
        }
        let (len, rest) = rest.split_at(octets);
        let len = len
            .iter()
            .fold(0_usize, |len, &octet| (len << 8) | usize::from(octet));
        (len, rest)
    };
    (found == tag && rest.len() >= len).then(|| rest.split_at(len))
}

/// Why a TLS session could not be made, for people: what was wrong with the server's
/// certificate and what to change.
#[derive(Debug)]
pub(crate) struct TlsError {
    message: String,
}

impl TlsError {
    const fn new(message: String) -> Self {
        Self { message }
    }

    fn handshake(e: &io::Error, trusted: &str) -> Self {
        let rustls = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        let hint = match rustls {
            Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => format!(
                "; the certificate authority that signed it is not among {trusted}: give that \
                 authority's certificate as sslrootcert"
            ),
            Some(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => "; connect with a host name the certificate names, or use sslmode=verify-ca \
                   to verify the certificate's chain only"
                .to_owned(),
            _ => String::new(),
        };
        Self::new(format!("{e}{hint}"))
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for TlsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths_past_the_input_are_refused() {
        assert_eq!(der(&[0x30, 0x03, 0x01], SEQUENCE), None);
        assert_eq!(der(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff], SEQUENCE), None);
        assert_eq!(der(&[0x30, 0x80], SEQUENCE), None);
        assert_eq!(der(&[0x06, 0x01, 0x2a], SEQUENCE), None);
        assert_eq!(
            der(&[0x30, 0x81, 0x01, 0x05, 0x09], SEQUENCE),
            Some((&[0x05][..], &[0x09][..]))
        );
    }

    #[test]
    fn garbage_has_no_end_point_hash() {
        assert_eq!(server_end_point(b""), None);
        assert_eq!(server_end_point(b"not a certificate"), None);
    }
}
