//! The trust anchors of a TLS client, one rule for every store that verifies a server (Redis's
//! `tls_ca_file`, Postgres's `sslrootcert`): the certificates of the PEM the user named, or
//! else the system's roots. A PEM that does not parse or holds a bad certificate is
//! `config_invalid` (in the store's words: `bad` names its option); a system without a single
//! loadable root is `store_unavailable`, said before any connect rather than as an unknown
//! issuer at every handshake. [`read_pem`] reads the files those options and Redis's client
//! certificate and key name.

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::error::{Error, Result};

/// The roots of `pem` (`None`: the system's). `bad` turns a problem with `pem`
/// (`does not parse: ...`, `holds a bad certificate: ...`) into the store's `config_invalid`.
pub(crate) fn load(pem: Option<&[u8]>, bad: impl Fn(String) -> Error) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    match pem {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| bad(format!("does not parse: {e}")))?;
                roots.add(cert).map_err(|e| bad(format!("holds a bad certificate: {e}")))?;
            }
        }
        None => {
            let loaded = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(loaded.certs);
            if added == 0 {
                let why = loaded.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ");
                return Err(Error::store(format!("no system root certificates could be loaded ({why})")));
            }
        }
    }
    Ok(roots)
}

/// The PEM file at `path`, read whole: for `CERTIFICATE`, certificates that parse, at least one;
/// for another `label` (`PRIVATE KEY`), at least one block naming it (the TLS configuration
/// parses it). `bad` turns a problem (`which cannot be read: ...`, `which is not PEM: ...`,
/// `which holds no PEM CERTIFICATE`) into the store's `config_invalid`.
pub(crate) fn read_pem(path: &std::path::Path, label: &str, bad: impl Fn(String) -> Error) -> Result<Vec<u8>> {
    let pem = std::fs::read(path).map_err(|e| bad(format!("which cannot be read: {e}")))?;
    let found = if label == "CERTIFICATE" {
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("which is not PEM: {e}")))?;
        !certs.is_empty()
    } else {
        let text = String::from_utf8_lossy(&pem);
        text.contains("-----BEGIN") && text.contains(label)
    };
    if !found {
        return Err(bad(format!("which holds no PEM {label}")));
    }
    Ok(pem)
}
