//! TLS for the network targets, with rustls (ring provider): the URL options, the client
//! configuration, a stream that is plain TCP or TLS, and what a failed handshake means.
//!
//! - `ca=PATH`: trust the PEM certificates in PATH (a private CA) instead of the system's
//!   roots. A URL option, like every other target option, so one run can point two targets at
//!   two CAs and a workload file can carry it as a parameter.
//! - `insecure=true`: encrypt but accept any certificate (self-signed test servers). The
//!   handshake's signatures are still checked; the result names the target's TLS "insecure".
//!
//! Verification is on by default: the chain must lead to a trusted root and the certificate
//! must name the host of the URL (RFC 6125 via webpki), for every mode that turns TLS on
//! (PostgreSQL's `sslmode=require` too, unlike libpq, which verifies only with a root file).

use std::error::Error as StdError;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::pipelined::FrameLen;
use super::{socket, TargetUrl};
use crate::error::InputError;
pub use crate::vocab::TlsMode;
use crate::vocab::{ErrorClass, OpError};

/// The URL options every TLS-capable target accepts.
pub const OPTIONS: [&str; 2] = ["ca", "insecure"];

/// The mode a target URL asks for, as the result records it (`None`: a target without a
/// network), read from its scheme and options as the targets read them.
pub fn mode_of_url(url: &str) -> Option<TlsMode> {
    let url = TargetUrl::parse(url).ok()?;
    let option = |name: &str| url.options.get(name).map(|v| v.to_ascii_lowercase());
    let on = match url.scheme.as_str() {
        "rediss" | "https" | "ldaps" | "grpcs" | "memcacheds" => true,
        "redis" | "http" | "grpc" | "memcached" => false,
        "ldap" => option("starttls").as_deref() == Some("true"),
        "postgres" | "postgresql" => option("sslmode").is_some_and(|m| m != "disable"),
        "mysql" | "mariadb" => option("ssl-mode").is_some_and(|m| m != "disabled"),
        _ => return None,
    };
    Some(match (on, option("insecure").as_deref()) {
        (false, _) => TlsMode::Off,
        (true, Some("true")) => TlsMode::Insecure,
        (true, _) => TlsMode::Verified,
    })
}

/// A target's TLS settings: the mode, and for `Verified` the roots it trusts.
#[derive(Clone)]
pub struct Tls {
    pub mode: TlsMode,
    /// The `ca=` file, if given (a private CA instead of the system roots).
    pub ca: Option<String>,
    config: Option<Arc<ClientConfig>>,
}

impl Tls {
    /// The TLS of a target whose URL asked for it (`on`) or not: reads `ca` and `insecure`,
    /// loads the CA file, builds the rustls configuration. `ca`/`insecure` without TLS are
    /// refused rather than silently ignored. Both come from the URL only (not workload
    /// parameters), so that the URL in the result says what was verified.
    pub fn from_url(url: &TargetUrl, on: bool) -> Result<Tls, InputError> {
        let ca = url.options.get("ca").filter(|c| !c.is_empty()).cloned();
        let insecure = match url.options.get("insecure").map(String::as_str) {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(InputError::new(format!(
                    "insecure={other}: expected true or false"
                )))
            }
        };
        if !on {
            if ca.is_some() || insecure {
                return Err(InputError::new(format!(
                    "ca= and insecure= apply to TLS connections, and this {}:// URL asks for none",
                    url.scheme
                ))
                .help(
                    "use postgres://…?sslmode=verify-full, mysql://…?ssl-mode=VERIFY_IDENTITY, \
                     rediss://, ldaps:// (or ldap://…?starttls=true), https://",
                ));
            }
            return Ok(Tls::off());
        }
        if insecure && ca.is_some() {
            return Err(InputError::new(
                "insecure=true accepts any certificate, so ca= would do nothing: drop one of them",
            ));
        }
        let ca_certs = match &ca {
            Some(path) => load_ca(path)?,
            None => Vec::new(),
        };
        let config = client_config(&ca_certs, insecure)?;
        Ok(Tls {
            mode: if insecure {
                TlsMode::Insecure
            } else {
                TlsMode::Verified
            },
            ca,
            config: Some(config),
        })
    }

    pub fn off() -> Tls {
        Tls {
            mode: TlsMode::Off,
            ca: None,
            config: None,
        }
    }

    pub fn is_on(&self) -> bool {
        self.mode != TlsMode::Off
    }

    /// The same settings offering `protocols` by ALPN, in order of preference (HTTP/2's
    /// `h2`); nothing changes when TLS is off.
    pub fn with_alpn(mut self, protocols: &[&[u8]]) -> Tls {
        if let Some(config) = &mut self.config {
            let mut offered = ClientConfig::clone(config);
            offered.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
            *config = Arc::new(offered);
        }
        self
    }

    /// The rustls configuration (None when TLS is off).
    pub fn config(&self) -> Option<Arc<ClientConfig>> {
        self.config.clone()
    }

    /// Wrap a connected socket: TLS handshake with `host` when on, else the socket as is.
    pub async fn wrap(
        &self,
        host: &str,
        tcp: TcpStream,
        shown: &str,
    ) -> Result<NetStream, OpError> {
        let Some(config) = &self.config else {
            return Ok(NetStream::Plain(tcp));
        };
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            OpError::new(
                ErrorClass::Connect,
                format!("{shown}: '{host}' is not a host name TLS can verify"),
            )
        })?;
        TlsConnector::from(Arc::clone(config))
            .connect(name, tcp)
            .await
            .map(|s| NetStream::Tls(Box::new(s)))
            .map_err(|e| self.handshake_error(shown, &e))
    }

    /// A failed handshake as a `connect` error that says why: which verification failed and
    /// against which roots, with what to do about it.
    pub fn handshake_error(&self, shown: &str, e: &(dyn StdError + 'static)) -> OpError {
        let roots = match &self.ca {
            Some(path) => format!("the CA in ca={path}"),
            None => "the system's root CAs".to_string(),
        };
        let skip = "or insecure=true to skip verification (test servers only)";
        let message = match find_rustls_error(e) {
            Some(rustls::Error::InvalidCertificate(cert)) => {
                // The fix depends on which check failed.
                let (why, fix) = match cert {
                    CertificateError::UnknownIssuer | CertificateError::BadSignature => (
                        format!("its certificate is not signed by {roots}"),
                        "give the server's CA with ca=PATH",
                    ),
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. } => (
                        "its certificate does not name the host in the URL".to_string(),
                        "connect by a name or address the certificate holds (its subjectAltName)",
                    ),
                    CertificateError::Expired | CertificateError::ExpiredContext { .. } => (
                        "its certificate has expired".to_string(),
                        "renew the server's certificate",
                    ),
                    other => (
                        format!("its certificate is invalid ({other:?})"),
                        "give the server's CA with ca=PATH",
                    ),
                };
                format!("TLS certificate verification failed for {shown}: {why}; {fix}, {skip}")
            }
            // What a plain (non-TLS) port answers a ClientHello with.
            Some(rustls::Error::InvalidMessage(_)) => format!(
                "TLS handshake with {shown} failed: the server did not answer in TLS ({}); is \
                 this its TLS port? A URL asking for TLS on a plain port fails so",
                find_rustls_error(e).map_or(String::new(), |r| r.to_string())
            ),
            Some(other) => format!("TLS handshake with {shown} failed: {other}"),
            None => format!("TLS handshake with {shown} failed: {e}"),
        };
        OpError::new(ErrorClass::Connect, message)
    }
}

impl Tls {
    /// A driver's connect error as [`Tls::handshake_error`] when TLS is what failed.
    pub fn rustls_failure(&self, shown: &str, e: &(dyn StdError + 'static)) -> Option<OpError> {
        find_rustls_error(e).map(|_| self.handshake_error(shown, e))
    }
}

/// The rustls error somewhere in an error's chain (drivers wrap it in io::Error and their own).
fn find_rustls_error<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    let mut cur: Option<&'a (dyn StdError + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(inner) = err.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            if let Some(r) = inner.downcast_ref::<rustls::Error>() {
                return Some(r);
            }
        }
        cur = err.source();
    }
    None
}

/// The certificates in a PEM file; an input error when it cannot be read or holds none.
fn load_ca(path: &str) -> Result<Vec<CertificateDer<'static>>, InputError> {
    let bad = |why: String| {
        InputError::new(format!("ca={path}: {why}"))
            .help("give a PEM file holding the CA certificate(s) that signed the server's")
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(format!("cannot read it: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".to_string()));
    }
    Ok(certs)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client configuration that trusts `ca` (or the system roots when empty), or anything
/// when `insecure`.
fn client_config(
    ca: &[CertificateDer<'static>],
    insecure: bool,
) -> Result<Arc<ClientConfig>, InputError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| InputError::new(format!("TLS setup: {e}")))?;
    let config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        if ca.is_empty() {
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        } else {
            for cert in ca {
                roots.add(cert.clone()).map_err(|e| {
                    InputError::new(format!("ca=: a certificate rustls refuses: {e}"))
                })?;
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Ok(Arc::new(config))
}

/// `insecure=true`: any certificate is accepted, but the handshake signatures are checked, so
/// the server still proves it holds the key of the certificate it sent.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
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

/// A client's socket: plain TCP or TLS over it (redis://, rediss://, http://, https://).
pub enum NetStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl NetStream {
    /// The protocol the server chose by ALPN; `None` on plain TCP or when it chose none.
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            NetStream::Plain(_) => None,
            NetStream::Tls(tls) => tls.get_ref().1.alpn_protocol(),
        }
    }

    /// Read what has arrived into the room at the end of `buf` (waiting for at least one
    /// byte): the bytes read, 0 when the peer closed. Plain TCP reads with `try_read`
    /// ([`socket::fill`]); TLS reads and decrypts what its records hold.
    pub async fn fill(&mut self, buf: &mut super::readbuf::ReadBuf) -> io::Result<usize> {
        match self {
            NetStream::Plain(tcp) => socket::fill(tcp, buf).await,
            NetStream::Tls(tls) => {
                buf.rewind_if_drained();
                let n = tls.read(buf.spare()).await?;
                buf.advance(n);
                Ok(n)
            }
        }
    }

    /// Write all of `bytes`. TLS is flushed after: its stream may keep the last records in
    /// its own buffer when the socket's is full, and a request must leave before its reply
    /// is awaited.
    pub async fn send_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            NetStream::Plain(tcp) => socket::write_all(tcp, bytes).await,
            NetStream::Tls(tls) => {
                tls.write_all(bytes).await?;
                tls.flush().await
            }
        }
    }
}

/// The most plaintext one TLS record carries, and what memcached reads at once (its read
/// buffer).
const RECORD: usize = 16 * 1024;

impl NetStream {
    /// Write all of `bytes`, whole requests that `frame` finds the ends of, so that over
    /// TLS no record carries the end of one request and the start of the next unless it
    /// carries both whole within [`RECORD`] bytes. For servers (memcached) that read a TLS
    /// record in parts, one part per request, and then wait on the socket: what is left of
    /// a record sits decrypted in the server's TLS library, the socket stays quiet, and the
    /// server never reads the rest of the pipeline. Each write is flushed before the next
    /// so that rustls makes its records of that write alone.
    pub async fn send_records(&mut self, bytes: &[u8], frame: FrameLen) -> io::Result<()> {
        let NetStream::Tls(tls) = self else {
            return self.send_all(bytes).await;
        };
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = records_len(rest, frame);
            tls.write_all(&rest[..n]).await?;
            tls.flush().await?;
            rest = &rest[n..];
        }
        Ok(())
    }
}

/// How much of `bytes` to write at once: its first request, and as many of those after
/// it as fit in [`RECORD`] bytes with it; all of it when `frame` cannot frame it.
fn records_len(bytes: &[u8], frame: FrameLen) -> usize {
    let mut n = 0;
    while n < bytes.len() {
        match frame(&bytes[n..]) {
            Ok(Some(len)) if n == 0 || n + len <= RECORD => n += len,
            Ok(Some(_)) => break,
            _ if n == 0 => return bytes.len(),
            _ => break,
        }
        if n >= RECORD {
            break;
        }
    }
    n
}

impl AsyncRead for NetStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for NetStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_flush(cx),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NetStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            NetStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A server's TLS configuration (loadrig's own servers, such as `loadrig collect`): its
/// certificate chain and private key from PEM files, with the same rustls and provider as
/// the clients.
pub fn server_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<Arc<rustls::ServerConfig>, InputError> {
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| {
            InputError::new(format!(
                "--tls-cert {}: cannot read it: {e}",
                cert.display()
            ))
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            InputError::new(format!(
                "--tls-cert {}: not a PEM certificate file: {e}",
                cert.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(InputError::new(format!(
            "--tls-cert {}: holds no certificate",
            cert.display()
        )));
    }
    let private = rustls::pki_types::PrivateKeyDer::from_pem_file(key).map_err(|e| {
        InputError::new(format!(
            "--tls-key {}: not a PEM private key: {e}",
            key.display()
        ))
    })?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| InputError::new(format!("TLS setup: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, private)
        .map_err(|e| {
            InputError::new(format!(
                "--tls-cert {} and --tls-key {}: {e}",
                cert.display(),
                key.display()
            ))
            .help("give the certificate and the private key that belongs to it")
        })?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_end_at_request_ends() {
        // Requests of 10 bytes each.
        let tens: FrameLen = |b| Ok((b.len() >= 10).then_some(10));
        assert_eq!(records_len(&[0; 25], tens), 20);
        assert_eq!(records_len(&[0; RECORD + 30], tens), RECORD / 10 * 10);
        let big: FrameLen = |b| Ok((b.len() >= RECORD + 5).then_some(RECORD + 5));
        assert_eq!(records_len(&[0; 2 * RECORD + 10], big), RECORD + 5);
        let never: FrameLen = |_| Err("not a request".into());
        assert_eq!(records_len(&[0; 7], never), 7);
    }

    #[test]
    fn the_mode_follows_the_url() {
        let m = |u: &str| mode_of_url(u).map(TlsMode::name);
        assert_eq!(m("redis://h:1/0"), Some("off"));
        assert_eq!(m("rediss://h:1/0?ca=/x"), Some("verified"));
        assert_eq!(m("https://h:1?insecure=true"), Some("insecure"));
        assert_eq!(m("postgres://u@h/db?sslmode=verify-full"), Some("verified"));
        assert_eq!(m("postgres://u@h/db?sslmode=disable"), Some("off"));
        assert_eq!(
            m("mysql://u@h/db?ssl-mode=REQUIRED&insecure=true"),
            Some("insecure")
        );
        assert_eq!(m("ldap://h:1?starttls=true"), Some("verified"));
        assert_eq!(m("sqlite://./a.db"), None);
        assert_eq!(m("not a url"), None);
    }

    #[test]
    fn each_failed_check_gets_its_own_fix() {
        let mut tls = Tls::from_url(&TargetUrl::parse("rediss://h").unwrap(), true).unwrap();
        tls.ca = Some("/x.pem".into());
        let says = |e: rustls::Error| tls.handshake_error("h:6380", &e).message;
        let name = says(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName,
        ));
        assert!(
            name.contains("does not name the host in the URL; connect by a name or address"),
            "{name}"
        );
        let issuer = says(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert!(
            issuer.contains("not signed by the CA in ca=/x.pem; give the server's CA with ca=PATH"),
            "{issuer}"
        );
        let plain = says(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert!(plain.contains("did not answer in TLS"), "{plain}");
        assert!(plain.contains("is this its TLS port?"), "{plain}");
    }

    #[test]
    fn options_without_tls_or_together_are_refused() {
        let t = |u: &str, on: bool| Tls::from_url(&TargetUrl::parse(u).unwrap(), on);
        assert!(t("redis://h?insecure=true", false).is_err());
        assert!(t("rediss://h?insecure=true&ca=/x", true).is_err());
        assert!(t("rediss://h?insecure=maybe", true).is_err());
        let e = t("rediss://h?ca=/nonexistent/ca.pem", true).err().unwrap();
        assert!(
            e.to_string()
                .contains("ca=/nonexistent/ca.pem: cannot read it"),
            "{e}"
        );
        assert_eq!(
            t("rediss://h?insecure=true", true).unwrap().mode,
            TlsMode::Insecure
        );
    }
}
