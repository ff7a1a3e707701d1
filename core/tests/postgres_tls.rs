//! libpq's `sslmode` on a real Postgres 15 with TLS on and a certificate from a private CA
//! (tests/postgres-server.sh with `TLS=1`; the certificate names `localhost` only), through the
//! tokio store and through the sans-IO session's [`Endpoint`]: `prefer` and `require` encrypt
//! without verifying (a private CA connects, as with psql), `verify-ca` checks the chain,
//! `verify-full` the chain and the host name; a failed check is `store_unavailable`, a bad
//! `sslmode` or `sslrootcert` `config_invalid`. Every connection that decides is checked to be
//! TLS on the server's side (`pg_stat_ssl`).
#![cfg(feature = "postgres")]

#[path = "support/postgres_server.rs"]
mod postgres_server;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use postgres_server::PostgresServer;
use throttlekit::postgres::session::{Endpoint, Tls};
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::{ErrorCode, Limiter, Result, Strategy};

/// Connecting gets 30 s, as in tests/postgres.rs (a new backend is slow on a loaded machine).
fn options(url: &str) -> PostgresOptions {
    PostgresOptions {
        pool_size: 1,
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(30),
        sweep_interval: None,
        ..PostgresOptions::new(url)
    }
}

/// `server`'s URL on `host`, with `params` (and an application_name to find its connection by).
fn url(server: &PostgresServer, host: &str, params: &str) -> String {
    let u = server.url.replace("@127.0.0.1:", &format!("@{host}:"));
    format!("{u}?application_name=tk-tls&{params}")
}

/// Connects, decides twice on a limit of 1 (allowed, then denied), and returns what the server
/// says of the connection's encryption (`true`/`false` from `pg_stat_ssl`) while the store is open.
fn connect_and_decide(server: &PostgresServer, url: &str) -> Result<String> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!("tk-tls-{}", N.fetch_add(1, Ordering::Relaxed));
    let store = PostgresStore::connect_blocking(options(&url.replace("tk-tls", &name)))?;
    let limiter =
        Limiter::builder(Strategy::fixed_window(1, 3_600_000).unwrap()).store(std::sync::Arc::new(store)).build();
    let key = name.clone();
    assert!(limiter.check_sync(&key, 1)?.allowed, "{url}");
    assert!(!limiter.check_sync(&key, 1)?.allowed, "{url}");
    let sql = "SELECT string_agg(s.ssl::text, ',') FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
               WHERE a.application_name = $$NAME$$";
    let out = Command::new("psql")
        .args([&format!("{}?sslmode=prefer", server.url), "-tAc", &sql.replace("NAME", &name)])
        .output()
        .expect("psql");
    assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn code(r: Result<String>) -> (ErrorCode, String) {
    let e = r.expect_err("an error");
    (e.code(), e.to_string())
}

#[test]
fn each_sslmode_verifies_what_libpq_verifies() {
    let server = PostgresServer::start_tls();
    let ca = server.tls_file("ca.crt");
    let ca = ca.to_str().unwrap();
    let other = server.tls_file("other-ca.crt");

    // Not verified: the private CA is in no trust store, and these connect and decide, on TLS.
    for params in ["", "sslmode=prefer", "sslmode=allow", "sslmode=require"] {
        for host in ["localhost", "127.0.0.1"] {
            let u = url(&server, host, params);
            assert_eq!(connect_and_decide(&server, &u).expect(&u), "true", "{u}");
        }
    }
    // The chain against the CA, any name (127.0.0.1 is not in the certificate).
    let u = url(&server, "127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}"));
    assert_eq!(connect_and_decide(&server, &u).expect(&u), "true", "{u}");
    // The chain and the name.
    let u = url(&server, "localhost", &format!("sslmode=verify-full&sslrootcert={ca}"));
    assert_eq!(connect_and_decide(&server, &u).expect(&u), "true", "{u}");

    let refused = [
        url(&server, "127.0.0.1", &format!("sslmode=verify-full&sslrootcert={ca}")),
        url(&server, "localhost", "sslmode=verify-ca"),
        url(&server, "localhost", "sslmode=verify-full&sslrootcert=system"),
        url(&server, "localhost", &format!("sslmode=verify-ca&sslrootcert={}", other.display())),
    ];
    for u in refused {
        let (c, m) = code(connect_and_decide(&server, &u));
        assert_eq!(c, ErrorCode::StoreUnavailable, "{u}: {m}");
        assert!(m.contains("certificate"), "{u}: {m}");
    }

    for (params, says) in [
        ("sslmode=verify-ca&sslrootcert=/nonexistent/ca.crt", "sslrootcert=/nonexistent/ca.crt, which cannot be read"),
        ("sslmode=verify-everything", "sslmode=verify-everything"),
    ] {
        let u = url(&server, "localhost", params);
        let (c, m) = code(connect_and_decide(&server, &u));
        assert_eq!(c, ErrorCode::ConfigInvalid, "{u}: {m}");
        assert!(m.contains("postgres.url") && m.contains(says), "{u}: {m}");
    }
}

#[test]
fn a_server_without_tls_is_refused_by_require_and_plain_for_prefer() {
    let server = PostgresServer::start();
    let plain = url(&server, "127.0.0.1", "sslmode=prefer");
    assert_eq!(connect_and_decide(&server, &plain).expect(&plain), "false");
    for mode in ["require", "verify-ca", "verify-full"] {
        let u = url(&server, "localhost", &format!("sslmode={mode}"));
        let (c, m) = code(connect_and_decide(&server, &u));
        assert_eq!(c, ErrorCode::StoreUnavailable, "{u}: {m}");
    }
}

/// What a binding's own socket is told (Node's `__pgOf`): the mode as core read it and
/// sslrootcert's PEM, from the URL's either form.
#[test]
fn the_endpoint_carries_the_mode_and_the_roots() {
    let server = PostgresServer::start_tls();
    let ca = server.tls_file("ca.crt");
    let pem = std::fs::read(&ca).unwrap();
    let e = Endpoint::parse(&url(&server, "localhost", &format!("sslmode=verify-full&sslrootcert={}", ca.display())))
        .unwrap()
        .unwrap();
    assert_eq!((e.tls, e.root_certs.as_deref()), (Tls::VerifyFull, Some(&pem[..])));
    let kv = format!("host=localhost port=5432 user=u sslmode=verify-ca sslrootcert='{}'", ca.display());
    let e = Endpoint::parse(&kv).unwrap().unwrap();
    assert_eq!((e.tls, e.root_certs.as_deref(), e.port), (Tls::VerifyCa, Some(&pem[..]), 5432));
    let e = Endpoint::parse(&url(&server, "localhost", "")).unwrap().unwrap();
    assert_eq!((e.tls, e.root_certs), (Tls::Prefer, None));
    let e = Endpoint::parse(&url(&server, "localhost", "sslmode=verify-ca&sslrootcert=/nonexistent")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}");
}
