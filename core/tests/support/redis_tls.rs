//! Throwaway TLS material made with `openssl` at test time, and a `redis-server` serving TLS
//! with it. Include it beside `redis_server.rs`.
//!
//! [`Pki::generate`] makes, in a fresh directory: a CA (`ca.crt`), a server certificate for
//! `127.0.0.1` only (IP SAN; so `localhost` is a wrong host name; also good for client auth,
//! which cluster nodes present to each other on a TLS bus), a client certificate for
//! mutual TLS, and a second, unrelated CA (`other-ca.crt`) for the wrong-CA case.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::redis_server::RedisServer;

/// The generated files.
pub struct Pki {
    pub dir: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("openssl not found ({e}): apt-get install -y openssl"));
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA key and self-signed certificate `name.key` / `name.crt`.
fn ca(dir: &Path, name: &str) {
    let (key, crt, subj) = (format!("{name}.key"), format!("{name}.crt"), format!("/CN=throttlekit test {name}"));
    openssl(dir, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", &key]);
    openssl(
        dir,
        &["req", "-x509", "-new", "-key", &key, "-out", &crt, "-days", "2", "-subj", &subj]
            .into_iter()
            .chain(["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            .collect::<Vec<_>>(),
    );
}

/// A leaf `name.key` / `name.crt` signed by `ca`, with `ext` (SAN, EKU) as its extensions.
fn leaf(dir: &Path, name: &str, ca: &str, ext: &str) {
    let (key, csr, crt, extfile) =
        (format!("{name}.key"), format!("{name}.csr"), format!("{name}.crt"), format!("{name}.ext"));
    std::fs::write(dir.join(&extfile), ext).expect("write the extensions file");
    openssl(dir, &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", &key]);
    // PKCS#8, which every TLS stack reads.
    openssl(dir, &["pkcs8", "-topk8", "-nocrypt", "-in", &key, "-out", &format!("{name}.p8")]);
    std::fs::rename(dir.join(format!("{name}.p8")), dir.join(&key)).expect("rename the key");
    openssl(dir, &["req", "-new", "-key", &key, "-out", &csr, "-subj", &format!("/CN={name}")]);
    let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "2",
            "-extfile",
            &extfile,
        ],
    );
}

impl Pki {
    /// Generates everything in a new temp directory.
    pub fn generate() -> Pki {
        let dir = std::env::temp_dir().join(format!(
            "throttlekit-tls-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        ca(&dir, "ca");
        ca(&dir, "other-ca");
        leaf(
            &dir,
            "server",
            "ca",
            "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n",
        );
        leaf(&dir, "client", "ca", "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n");
        Pki { dir }
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// The arguments that make a server serve TLS on `{tls_port}` with the server certificate.
    pub fn server_args(&self, mutual: bool) -> Vec<String> {
        let p = |f: &str| self.path(f).to_str().expect("a UTF-8 path").to_string();
        vec![
            "--tls-port".to_string(),
            "{tls_port}".to_string(),
            "--tls-cert-file".to_string(),
            p("server.crt"),
            "--tls-key-file".to_string(),
            p("server.key"),
            "--tls-ca-cert-file".to_string(),
            p("ca.crt"),
            "--tls-auth-clients".to_string(),
            if mutual { "yes" } else { "no" }.to_string(),
        ]
    }

    /// A server with a plaintext port (for the test's own checks) and a TLS port; it asks
    /// clients for a certificate (signed by `ca.crt`) when `mutual`.
    pub fn server(&self, mutual: bool) -> RedisServer {
        RedisServer::start_with(&self.server_args(mutual), crate::redis_server::free_port)
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
