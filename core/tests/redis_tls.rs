//! The store over TLS (rustls) against a real `redis-server --tls-port`, with a throwaway CA
//! made by `openssl` at test time (`support/redis_tls.rs`): the vectors replay with no mismatch;
//! the certificate chain and the host name are verified by default, so a wrong CA, a wrong host
//! name, or no CA option at all (system roots do not know the test CA) fail to connect with
//! `store_unavailable` naming the cause; mutual TLS works with a client certificate and fails
//! without one; and a `rediss://` URL never falls back to plaintext.
#![cfg(feature = "redis")]

#[path = "support/redis_cluster.rs"]
mod redis_cluster;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_tls.rs"]
mod redis_tls;

use std::path::PathBuf;
use std::sync::Arc;

use redis_tls::Pki;
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore};
use throttlekit::{ErrorCode, Limiter, Strategy, conformance};

fn tls_options(url: String, pki: &Pki) -> RedisOptions {
    RedisOptions { urls: vec![url], tls_ca_file: Some(pki.path("ca.crt")), timeout_ms: 5000, ..RedisOptions::default() }
}

fn refused(options: RedisOptions, cause: &[&str]) {
    let err = RedisStore::connect_blocking(options).expect_err("the connection must be refused");
    assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
    assert!(cause.iter().any(|c| err.message().contains(c)), "{err} should name one of {cause:?}");
}

#[test]
fn vectors_replay_over_tls_with_no_mismatch() {
    let pki = Pki::generate();
    let server = pki.server(false);
    let url = format!("rediss://127.0.0.1:{}", server.tls_port.unwrap());
    let mut stores = throttlekit::redis::conformance_stores_with(tls_options(url.clone(), &pki)).expect("connect");
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance-vectors/upstream-golden-1.5.2.json");
    let report = conformance::replay_path(&golden, &mut stores).expect("the golden file");
    assert_eq!((report.passed, report.failed), (54, 0), "{:?}", report.failures);
    // The live path too: a limiter on the TLS store.
    let store = Arc::new(RedisStore::connect_blocking(tls_options(url, &pki)).unwrap());
    // A day's window on the system clock: a window boundary between the checks would start the
    // count over (a probability of about 1 in 20,000 for a test of a few seconds).
    let l = Limiter::builder(Strategy::fixed_window(2, 86_400_000).unwrap()).store(store).build();
    assert!(l.check_sync("k", 1).unwrap().allowed);
    assert!(l.check_sync("k", 1).unwrap().allowed);
    assert!(!l.check_sync("k", 1).unwrap().allowed);
}

#[test]
fn verification_failures_are_store_unavailable_with_the_cause() {
    let pki = Pki::generate();
    let server = pki.server(false);
    let port = server.tls_port.unwrap();
    // The server's chain does not lead to this CA.
    let wrong_ca = RedisOptions {
        tls_ca_file: Some(pki.path("other-ca.crt")),
        ..tls_options(format!("rediss://127.0.0.1:{port}"), &pki)
    };
    refused(wrong_ca, &["UnknownIssuer", "certificate"]);
    // The certificate names 127.0.0.1 only.
    refused(tls_options(format!("rediss://localhost:{port}"), &pki), &["NotValidForName", "not valid for name"]);
    // Verification is on by default: the system roots do not know the test CA.
    let system_roots =
        RedisOptions { urls: vec![format!("rediss://127.0.0.1:{port}")], timeout_ms: 5000, ..RedisOptions::default() };
    refused(system_roots, &["UnknownIssuer", "certificate"]);
}

#[test]
fn mutual_tls_needs_the_client_certificate() {
    let pki = Pki::generate();
    let server = pki.server(true);
    let url = format!("rediss://127.0.0.1:{}", server.tls_port.unwrap());
    let without = tls_options(url.clone(), &pki);
    let err = RedisStore::connect_blocking(without).expect_err("no client certificate");
    assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
    let with = RedisOptions {
        tls_cert_file: Some(pki.path("client.crt")),
        tls_key_file: Some(pki.path("client.key")),
        ..tls_options(url, &pki)
    };
    let store = Arc::new(RedisStore::connect_blocking(with).expect("mutual TLS"));
    let l = Limiter::builder(Strategy::gcra(10, 1_000, None).unwrap()).store(store).build();
    assert!(l.check_sync("mtls", 1).unwrap().allowed);
}

#[test]
fn rediss_never_falls_back_to_plaintext() {
    let pki = Pki::generate();
    let server = pki.server(false);
    // The plaintext port, addressed as rediss://: the TLS handshake fails; nothing is sent in clear.
    let plain = tls_options(format!("rediss://127.0.0.1:{}", server.port), &pki);
    let err = RedisStore::connect_blocking(plain).expect_err("no plaintext fallback");
    assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
    // TLS options beside a plaintext URL are refused up front rather than ignored.
    let mixed = tls_options(format!("redis://127.0.0.1:{}", server.port), &pki);
    assert_eq!(RedisStore::connect_blocking(mixed).unwrap_err().code(), ErrorCode::ConfigInvalid);
}

#[test]
fn a_cluster_over_tls_replays_the_golden_file() {
    let pki = Pki::generate();
    // The nodes talk TLS to each other too (bus and replication); clients reach them on their
    // TLS ports, which CLUSTER SLOTS announces to a TLS client.
    let mut args = pki.server_args(false);
    args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from));
    let ca = pki.path("ca.crt").to_str().unwrap().to_string();
    let cluster = redis_cluster::RedisCluster::start_with(3, 0, &args, Some(&ca));
    let urls = cluster.nodes.iter().map(|n| format!("rediss://127.0.0.1:{}", n.tls_port.unwrap())).collect();
    let options = RedisOptions { urls, mode: RedisMode::Cluster, ..tls_options(String::new(), &pki) };
    let mut stores = throttlekit::redis::conformance_stores_with(options.clone()).expect("connect over TLS");
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance-vectors/upstream-golden-1.5.2.json");
    let report = conformance::replay_path(&golden, &mut stores).expect("the golden file");
    assert_eq!((report.passed, report.failed), (54, 0), "{:?}", report.failures);
    // Keys on every master, reached over TLS.
    let store = Arc::new(RedisStore::connect_blocking(options).unwrap());
    let l = Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).store(store).prefix("tls").build();
    for i in 0..30 {
        assert!(l.check_sync(&format!("k{i}"), 1).unwrap().allowed);
    }
    // The routed async path too (a multiplexed TLS connection per master).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for i in 30..60 {
        assert!(rt.block_on(l.check(&format!("k{i}"), 1)).unwrap().allowed);
    }
    for port in cluster.master_ports() {
        let n: u64 = redis_server::cli(port, &["dbsize"]).unwrap().trim().parse().unwrap();
        assert!(n > 0, "no key on the master {port}");
    }
}
