//! libpq's `sslmode` and `sslrootcert`, read once for both paths (the tokio store and a
//! binding's own socket; docs/postgres.md, "TLS").
//!
//! Why here and not in tokio-postgres: its URL parser knows only `disable`, `prefer` and
//! `require`, and rejects `verify-ca`, `verify-full` and `sslrootcert`. So `read_url` takes
//! those two parameters out of the URL (either form) and hands tokio-postgres the rest.
//!
//! What each mode verifies is libpq's: `prefer` and `require` encrypt without checking the
//! certificate (a self-signed or private-CA server connects, as with psql), `verify-ca` checks
//! the chain and `verify-full` the chain and the host name. Without a chain check the handshake's
//! signatures are still verified (`AnyChain`): the server must hold the key of the certificate
//! it sent.

use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use crate::error::{Error, Result};

/// The URL's `sslmode`, as both paths read it (libpq's meaning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    /// Plain TCP (`disable`; always on a Unix socket).
    Disable,
    /// Ask for TLS (`SSLRequest`); plain when the server declines. The certificate is not
    /// checked (`allow` and `prefer`, the default).
    Prefer,
    /// TLS or no connection (a server that declines is `store_unavailable`); the certificate is
    /// not checked (`require`).
    Require,
    /// TLS with the certificate's chain checked against [`Endpoint::root_certs`](super::session::Endpoint::root_certs)
    /// (`verify-ca`); any host name.
    VerifyCa,
    /// TLS with the chain and the host name checked (`verify-full`).
    VerifyFull,
}

impl Tls {
    /// The mode as the URL spells it.
    pub fn name(self) -> &'static str {
        match self {
            Tls::Disable => "disable",
            Tls::Prefer => "prefer",
            Tls::Require => "require",
            Tls::VerifyCa => "verify-ca",
            Tls::VerifyFull => "verify-full",
        }
    }

    /// A server that declines TLS is refused.
    pub fn required(self) -> bool {
        matches!(self, Tls::Require | Tls::VerifyCa | Tls::VerifyFull)
    }

    fn parse(value: &str) -> Result<Tls> {
        Ok(match value {
            "disable" => Tls::Disable,
            "allow" | "prefer" => Tls::Prefer,
            "require" => Tls::Require,
            "verify-ca" => Tls::VerifyCa,
            "verify-full" => Tls::VerifyFull,
            other => {
                return Err(Error::config(
                    "postgres.url",
                    &format!("has sslmode={other}; expected disable, allow, prefer, require, verify-ca or verify-full"),
                ));
            }
        })
    }
}

/// A URL read: tokio-postgres's config of everything but the TLS parameters, the mode, and the
/// PEM of `sslrootcert` (`None`: the system's roots).
pub(crate) struct Url {
    pub config: tokio_postgres::Config,
    pub tls: Tls,
    pub root_certs: Option<Vec<u8>>,
}

/// Reads `url` (`postgres://...` or libpq's `key=value ...`): `config_invalid` (`postgres.url`)
/// for what is not a Postgres URL, an unknown `sslmode` or an unreadable `sslrootcert`.
pub(crate) fn read_url(url: &str) -> Result<Url> {
    let (rest, mode, root) = split(url);
    let mut config: tokio_postgres::Config =
        rest.parse().map_err(|e| Error::config("postgres.url", &format!("is not a Postgres URL: {e}")))?;
    let tls = match mode.as_deref() {
        None => Tls::Prefer,
        Some(m) => Tls::parse(m)?,
    };
    let root_certs = match root.as_deref() {
        None | Some("system") => None,
        Some(path) => Some(crate::tls_roots::read_pem(path.as_ref(), "CERTIFICATE", |why| {
            Error::config("postgres.url", &format!("has sslrootcert={path}, {why}"))
        })?),
    };
    config.ssl_mode(match tls {
        Tls::Disable => tokio_postgres::config::SslMode::Disable,
        Tls::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    Ok(Url { config, tls, root_certs })
}

/// `url` without `sslmode` and `sslrootcert`, and their values (the last of each).
fn split(url: &str) -> (String, Option<String>, Option<String>) {
    let (mut mode, mut root) = (None, None);
    let mut take = |key: &str, value: String| match key {
        "sslmode" => {
            mode = Some(value);
            true
        }
        "sslrootcert" => {
            root = Some(value);
            true
        }
        _ => false,
    };
    let rest = if let Some(after) = url.strip_prefix("postgres://").or_else(|| url.strip_prefix("postgresql://")) {
        // tokio-postgres reads the credentials up to the first '@', then the query from '?'.
        let from = url.len() - after.len() + after.find('@').map_or(0, |i| i + 1);
        match url[from..].find('?') {
            None => url.to_string(),
            Some(q) => {
                let (head, query) = url.split_at(from + q);
                let kept: Vec<&str> = query[1..]
                    .split('&')
                    .filter(|pair| {
                        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                        let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
                        !take(&decode(k), decode(v))
                    })
                    .collect();
                if kept.is_empty() { head.to_string() } else { format!("{head}?{}", kept.join("&")) }
            }
        }
    } else {
        match key_values(url) {
            // Malformed: tokio-postgres says why.
            None => url.to_string(),
            Some(pairs) => {
                let kept: Vec<&str> = pairs.into_iter().filter(|(k, v, _)| !take(k, v.clone())).map(|p| p.2).collect();
                kept.join(" ")
            }
        }
    };
    (rest, mode, root)
}

/// libpq's `key = value` form as tokio-postgres reads it (values bare or single-quoted, `\`
/// escaping): each key, its value and its text in `s`.
fn key_values(s: &str) -> Option<Vec<(&str, String, &str)>> {
    let mut out = Vec::new();
    let mut it = s.char_indices().peekable();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut it);
        let Some(&(start, _)) = it.peek() else { return Some(out) };
        while it.next_if(|&(_, c)| !c.is_whitespace() && c != '=').is_some() {}
        let key_end = it.peek().map_or(s.len(), |&(i, _)| i);
        skip_ws(&mut it);
        if it.next()?.1 != '=' {
            return None;
        }
        skip_ws(&mut it);
        let mut value = String::new();
        let quoted = it.next_if(|&(_, c)| c == '\'').is_some();
        loop {
            match it.peek().copied() {
                None if quoted => return None,
                None => break,
                Some((_, '\'')) if quoted => {
                    it.next();
                    break;
                }
                Some((_, c)) if c.is_whitespace() && !quoted => break,
                Some((_, '\\')) => {
                    it.next();
                    if let Some((_, c)) = it.next() {
                        value.push(c);
                    }
                }
                Some((_, c)) => {
                    it.next();
                    value.push(c);
                }
            }
        }
        let end = it.peek().map_or(s.len(), |&(i, _)| i);
        out.push((&s[start..key_end], value, &s[start..end]));
    }
}

/// The rustls client config for `tls` (not `Disable`): what it verifies is the mode's.
pub(crate) fn client_config(tls: Tls, root_certs: Option<&[u8]>) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::store(format!("TLS setup: {e}")))?;
    let config = match tls {
        Tls::Disable | Tls::Prefer | Tls::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyChain(provider.signature_verification_algorithms))),
        Tls::VerifyCa | Tls::VerifyFull => {
            let bad = |why: String| Error::config("postgres.url", &format!("sslrootcert {why}"));
            let roots = Arc::new(crate::tls_roots::load(root_certs, bad)?);
            let chain = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| Error::store(format!("TLS setup: {e}")))?;
            if tls == Tls::VerifyFull {
                builder.with_webpki_verifier(chain)
            } else {
                builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyName(chain)))
            }
        }
    };
    Ok(config.with_no_client_auth())
}

/// `prefer`/`require`: any certificate chain, but the handshake's signatures are checked
/// against the certificate the server sent.
#[derive(Debug)]
struct AnyChain(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyChain {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// `verify-ca`: webpki's chain check, any host name. webpki checks the chain before the name,
/// so a name error means the chain was good.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(NotValidForName | NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_tls_parameters_out_of_both_forms() {
        let (rest, mode, root) =
            split("postgres://u:p?w@h:1/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.crt");
        assert_eq!(rest, "postgres://u:p?w@h:1/db?application_name=x");
        assert_eq!((mode.as_deref(), root.as_deref()), (Some("verify-full"), Some("/tmp/ca.crt")));
        let (rest, mode, root) = split("postgresql://h/db?sslmode=require");
        assert_eq!((rest.as_str(), mode.as_deref(), root), ("postgresql://h/db", Some("require"), None));
        let (rest, mode, root) = split("host=h  sslmode = verify-ca user=u sslrootcert='/a b/c\\'d'");
        assert_eq!(
            (rest.as_str(), mode.as_deref(), root.as_deref()),
            ("host=h user=u", Some("verify-ca"), Some("/a b/c'd"))
        );
        let (rest, mode, _) = split("host=h user='unterminated");
        assert_eq!((rest.as_str(), mode), ("host=h user='unterminated", None));
    }

    #[test]
    fn an_unknown_mode_or_an_unreadable_root_file_is_config_invalid() {
        for url in ["postgres://h/db?sslmode=verify", "host=h sslmode=verify-ca sslrootcert=/nonexistent/ca.crt"] {
            let e = read_url(url).err().expect(url);
            assert_eq!(e.code(), crate::error::ErrorCode::ConfigInvalid, "{url}: {e}");
            assert!(e.to_string().contains("postgres.url"), "{e}");
        }
        let u = read_url("postgres://h/db?sslrootcert=system&sslmode=verify-full").unwrap();
        assert_eq!((u.tls, u.root_certs), (Tls::VerifyFull, None));
        assert_eq!(read_url("postgres://h/db").unwrap().tls, Tls::Prefer);
        assert_eq!(read_url("postgres://h/db?sslmode=allow").unwrap().tls, Tls::Prefer);
    }
}
