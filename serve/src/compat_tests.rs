//! Where a gateway reads the answer, serve answers as envoyproxy/ratelimit does: the
//! `duration_until_reset` of every unit at a window's first, middle and last millisecond (also
//! in shadow mode, with `replaces`, and for a request's own limit), `unlimited: true`, and the
//! other descriptors of a refused request. Each scenario runs through both doors, gRPC
//! `ShouldRateLimit` and `POST /json`, each over a socket to an in-process server on a manual
//! clock, on the memory store, Redis and Redis Cluster (`docs/serve.md`, "Migrating from
//! envoyproxy/ratelimit", lists every field).
//!
//! The expected reset is computed as envoyproxy/ratelimit computes it (`utils.CalculateReset`:
//! `unit_seconds - now_seconds % unit_seconds` on the whole epoch second), not as serve does.
//! The Redis runs need a server: `tests/serve.sh` starts one and a cluster and runs them with
//! `TK_SERVE_TEST_REDIS` and `TK_SERVE_TEST_CLUSTER` set.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::{Entry, RateLimitOverride};
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitRequest;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use serde_json::{Value, json};
use throttlekit::http::{Family, HeaderOptions};
use throttlekit::{ManualClock, MemoryStore, Store};

use crate::config::{Config, Unit};
use crate::decide::{Decider, FailMode, RequestLimits};
use crate::grpc::Rls;
use crate::http::{Http, router};
use crate::rls_server::RlsServer;
use crate::state::State;

/// envoyproxy/ratelimit's `duration_until_reset` for a unit of `unit_s` seconds at `now_ms`.
fn theirs(unit_s: i64, now_ms: i64) -> i64 {
    unit_s - now_ms.div_euclid(1000) % unit_s
}

/// Which store the server under test decides on.
#[derive(Clone, Debug)]
enum StoreKind {
    Memory,
    Redis(String),
    Cluster(String),
}

impl StoreKind {
    async fn build(&self) -> Arc<dyn Store> {
        use throttlekit::redis::{RedisMode, RedisOptions, RedisStore};
        let (urls, mode) = match self {
            StoreKind::Memory => return Arc::new(MemoryStore::new()),
            StoreKind::Redis(u) => (u, RedisMode::Standalone),
            StoreKind::Cluster(u) => (u, RedisMode::Cluster),
        };
        let mut o = RedisOptions::from_urls(urls);
        o.mode = mode;
        o.timeout_ms = 5_000;
        Arc::new(RedisStore::connect(o).await.unwrap_or_else(|e| panic!("{self:?}: {e}")))
    }

    /// From the environment `tests/serve.sh` sets; a run without it fails and says why.
    fn from_env(var: &str, cluster: bool) -> StoreKind {
        let urls = std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set: tests/serve.sh runs this test"));
        if cluster { StoreKind::Cluster(urls) } else { StoreKind::Redis(urls) }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Door {
    Grpc,
    Json,
}

/// One descriptor of a request: its entries, a request-sent limit, its own `hits_addend`.
#[derive(Clone, Debug, Default)]
struct Desc {
    entries: Vec<(String, String)>,
    limit: Option<(u32, Unit)>,
    hits: Option<u64>,
}

fn desc(key: &str, value: &str) -> Desc {
    Desc { entries: vec![(key.into(), value.into())], ..Desc::default() }
}

/// One descriptor's answer, as either door put it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Status {
    code: String,
    /// `(requests_per_unit, unit name)` of `current_limit`.
    limit: Option<(u32, String)>,
    remaining: u64,
    /// `duration_until_reset` in seconds (its nanos are checked to be 0).
    reset_s: Option<i64>,
}

fn ok(limit: Option<(u32, Unit)>, remaining: u64, reset_s: Option<i64>) -> Status {
    Status { code: "OK".into(), limit: limit.map(|(r, u)| (r, u.name().into())), remaining, reset_s }
}

fn over(limit: (u32, Unit), reset_s: i64) -> Status {
    Status { code: "OVER_LIMIT".into(), ..ok(Some(limit), 0, Some(reset_s)) }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Answer {
    overall: String,
    statuses: Vec<Status>,
    headers: Vec<(String, String)>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A server on 127.0.0.1 (gRPC and HTTP on ports 0) over one store, with a manual clock.
struct Served {
    clock: Arc<ManualClock>,
    grpc: RateLimitServiceClient<tonic::transport::Channel>,
    http: SocketAddr,
    door: Door,
}

async fn serve(store: &StoreKind, door: Door, config: &str, headers: bool, count_rejected: bool) -> Served {
    let clock = Arc::new(ManualClock::new(0));
    let decider = Decider {
        store: store.build().await,
        clock: clock.clone(),
        // A fresh namespace per server: runs on one Redis never meet.
        prefix: format!(
            "compat{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        ),
        fail: FailMode::Unavailable,
        shadow_global: false,
        count_rejected,
        headers: headers.then(|| HeaderOptions { family: Family::Draft6, ..HeaderOptions::default() }),
        limits: RequestLimits::default(),
    };
    let config = Config::from_texts(&[("compat.yaml", config)]).unwrap();
    let state = Arc::new(State::new(config, decider, "compat.yaml".into(), Duration::from_secs(10)));

    let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc_addr = grpc_listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(RlsServer::new(Rls { state: state.clone() }))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(grpc_listener)),
    );
    let http_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = http_listener.local_addr().unwrap();
    let app = router(Http { state, draining: Default::default() }, 1 << 20);
    tokio::spawn(async move { axum::serve(http_listener, app).await });
    let channel =
        tonic::transport::Channel::from_shared(format!("http://{grpc_addr}")).unwrap().connect().await.unwrap();
    Served { clock, grpc: RateLimitServiceClient::new(channel), http, door }
}

impl Served {
    /// Sends `descriptors` through this server's door at the clock's time.
    async fn ask(&mut self, descriptors: &[Desc]) -> Answer {
        match self.door {
            Door::Grpc => self.grpc(descriptors).await,
            Door::Json => self.json(descriptors).await,
        }
    }

    async fn grpc(&mut self, descriptors: &[Desc]) -> Answer {
        let request = RateLimitRequest {
            domain: "compat".into(),
            descriptors: descriptors
                .iter()
                .map(|d| RateLimitDescriptor {
                    entries: d.entries.iter().map(|(k, v)| Entry { key: k.clone(), value: v.clone() }).collect(),
                    limit: d.limit.map(|(r, u)| RateLimitOverride { requests_per_unit: r, unit: u.proto() }),
                    hits_addend: d.hits.map(|value| envoy_types::pb::google::protobuf::UInt64Value { value }),
                    ..Default::default()
                })
                .collect(),
            hits_addend: 0,
        };
        let r = self.grpc.should_rate_limit(request).await.unwrap().into_inner();
        let code = |c: i32| ["UNKNOWN", "OK", "OVER_LIMIT"][c as usize].to_string();
        Answer {
            overall: code(r.overall_code),
            statuses: r
                .statuses
                .iter()
                .map(|s| Status {
                    code: {
                        assert!(s.quota.is_none(), "`quota` is never set, as theirs: {s:?}");
                        code(s.code)
                    },
                    limit: s.current_limit.as_ref().map(|l| {
                        let unit = Unit::from_proto(l.unit).map_or("UNKNOWN", Unit::name);
                        (l.requests_per_unit, unit.to_string())
                    }),
                    remaining: u64::from(s.limit_remaining),
                    reset_s: s.duration_until_reset.map(|d| {
                        assert_eq!(d.nanos, 0, "whole seconds: {d:?}");
                        d.seconds
                    }),
                })
                .collect(),
            headers: r.response_headers_to_add.into_iter().map(|h| (h.key, h.value)).collect(),
        }
    }

    async fn json(&mut self, descriptors: &[Desc]) -> Answer {
        let body = json!({
            "domain": "compat",
            "descriptors": descriptors.iter().map(|d| {
                let mut v = json!({"entries": d.entries.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>()});
                if let Some((r, u)) = d.limit {
                    v["limit"] = json!({"requestsPerUnit": r, "unit": u.name()});
                }
                if let Some(h) = d.hits {
                    v["hitsAddend"] = json!(h);
                }
                v
            }).collect::<Vec<_>>(),
        })
        .to_string();
        let addr = self.http;
        let (status, body) = tokio::task::spawn_blocking(move || post_json(addr, &body)).await.unwrap();
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let overall = v["overallCode"].as_str().unwrap().to_string();
        assert_eq!(status, if overall == "OVER_LIMIT" { 429 } else { 200 }, "{body}");
        let statuses = v["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| Status {
                code: s["code"].as_str().unwrap().into(),
                limit: s
                    .get("currentLimit")
                    .map(|l| (l["requestsPerUnit"].as_u64().unwrap() as u32, l["unit"].as_str().unwrap().to_string())),
                // protojson leaves a 0 out.
                remaining: s.get("limitRemaining").map_or(0, |r| r.as_u64().unwrap()),
                reset_s: s.get("durationUntilReset").map(|d| {
                    let d = d.as_str().unwrap();
                    d.strip_suffix('s').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("not whole seconds: {d}"))
                }),
            })
            .collect();
        let headers = v
            .get("responseHeadersToAdd")
            .and_then(Value::as_array)
            .map(|hs| {
                hs.iter().map(|h| (h["key"].as_str().unwrap().into(), h["value"].as_str().unwrap().into())).collect()
            })
            .unwrap_or_default();
        Answer { overall, statuses, headers }
    }
}

/// `POST /json` over HTTP/1.1 (`Connection: close`): the status and the body.
fn post_json(addr: SocketAddr, body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /json HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

fn units() -> [(Unit, &'static str); 7] {
    [
        (Unit::Second, "second"),
        (Unit::Minute, "minute"),
        (Unit::Hour, "hour"),
        (Unit::Day, "day"),
        (Unit::Week, "week"),
        (Unit::Month, "month"),
        (Unit::Year, "year"),
    ]
}

/// A window's first, a middle (not on a whole second) and its last millisecond, for a window
/// of `w` ms that starts after 2026-05-28.
fn positions(w: i64) -> [(&'static str, i64); 3] {
    let start = (1_780_000_000_000 / w + 1) * w;
    [("start", start), ("middle", start + w / 2 + 345), ("last", start + w - 1)]
}

/// Every unit, every position: an enforced limit, a shadow-mode limit that refuses every hit
/// (`requests_per_unit: 0`, answered OK), a limit that `replaces` another, and a limit sent in
/// the request all say `unit - now_s % unit` seconds; the replaced limit reports nothing.
async fn reset_for_every_unit(store: StoreKind, door: Door) {
    let mut config = String::from(
        "domain: compat\ndescriptors:\n  - key: g\n    rate_limit: {unit: hour, requests_per_unit: 100, name: general}\n",
    );
    for (_, name) in units() {
        config.push_str(&format!(
            "  - key: u\n    value: \"{name}-*\"\n    rate_limit: {{unit: {name}, requests_per_unit: 5}}\n\
             \x20 - key: s\n    value: \"{name}-*\"\n    shadow_mode: true\n    rate_limit: {{unit: {name}, requests_per_unit: 0}}\n\
             \x20 - key: r\n    value: \"{name}-*\"\n    rate_limit: {{unit: {name}, requests_per_unit: 5, replaces: [{{name: general}}]}}\n"
        ));
    }
    let mut s = serve(&store, door, &config, false, false).await;
    for (unit, name) in units() {
        let unit_s = (unit.ms() / 1000) as i64;
        for (at, now) in positions(unit.ms() as i64) {
            s.clock.set(now);
            let value = format!("{name}-{at}");
            let request = [
                desc("u", &value),
                desc("s", &value),
                desc("g", &value),
                desc("r", &value),
                Desc { limit: Some((3, unit)), ..desc("o", &value) },
            ];
            let got = s.ask(&request).await;
            let reset = Some(theirs(unit_s, now));
            let want = Answer {
                overall: "OK".into(),
                statuses: vec![
                    ok(Some((5, unit)), 4, reset),
                    ok(Some((0, unit)), 0, reset),
                    ok(None, 0, None),
                    ok(Some((5, unit)), 4, reset),
                    ok(Some((3, unit)), 2, reset),
                ],
                headers: Vec::new(),
            };
            assert_eq!(got, want, "{store:?} {door:?}: {name} at its {at} ({now})");
            let edge = match at {
                "start" => Some(unit_s),
                "last" => Some(1),
                _ => None,
            };
            if let Some(e) = edge {
                assert_eq!(got.statuses[0].reset_s, Some(e), "{store:?} {door:?}: {name} at its {at}");
            }
        }
    }
}

/// `unlimited: true` is OK with no `current_limit` and 4294967295 left, whatever else the
/// request meets; a descriptor that matches nothing is OK with no limit and 0, as theirs.
async fn unlimited(store: StoreKind, door: Door) {
    let config = "domain: compat\ndescriptors:\n  - key: bulk\n    rate_limit: {unlimited: true}\n\
                  \x20 - key: blocked\n    rate_limit: {unit: minute, requests_per_unit: 0}\n";
    let mut s = serve(&store, door, config, true, false).await;
    let now = positions(60_000)[1].1;
    s.clock.set(now);
    let unlimited = ok(None, u64::from(u32::MAX), None);
    for _ in 0..3 {
        let got = s.ask(&[desc("bulk", "x"), desc("nothing", "y")]).await;
        assert_eq!(got.overall, "OK", "{store:?} {door:?}");
        assert_eq!(got.statuses, vec![unlimited.clone(), ok(None, 0, None)], "{store:?} {door:?}");
        assert!(got.headers.is_empty(), "no limit, no rate-limit fields: {got:?}");
    }
    let got = s.ask(&[desc("bulk", "x"), desc("blocked", "z")]).await;
    assert_eq!(got.overall, "OVER_LIMIT", "{store:?} {door:?}");
    assert_eq!(
        got.statuses,
        vec![unlimited, over((0, Unit::Minute), theirs(60, now))],
        "{store:?} {door:?}: unlimited beside a refusal"
    );
}

/// After one descriptor refuses, the others report what they have: nothing was charged, so a
/// `key2` with 10 left says 10, request after request (theirs charges it: 9, 8, 7, which
/// `--count-rejected` reproduces). The draft-6 fields name the refusing limit, as theirs do.
async fn others_of_a_refusal(store: StoreKind, door: Door, count_rejected: bool) {
    let config = "domain: compat\ndescriptors:\n  - key: key1\n    rate_limit: {unit: minute, requests_per_unit: 1}\n\
                  \x20 - key: key2\n    rate_limit: {unit: minute, requests_per_unit: 20}\n";
    let mut s = serve(&store, door, config, true, count_rejected).await;
    let (key1, key2) = ((1, Unit::Minute), (20, Unit::Minute));
    let [start, middle, last] = positions(60_000);
    for (at, now) in [start, middle] {
        s.clock.set(now);
        let tag = format!("{at}-{count_rejected}");
        let reset = theirs(60, now);
        let one = s.ask(&[desc("key1", &tag)]).await;
        assert_eq!(one.statuses, vec![ok(Some(key1), 0, Some(reset))], "{store:?} {door:?} {at}");
        let ten = s.ask(&[Desc { hits: Some(10), ..desc("key2", &tag) }]).await;
        assert_eq!(ten.statuses, vec![ok(Some(key2), 10, Some(reset))], "{store:?} {door:?} {at}");
        for n in 0..3u64 {
            let got = s.ask(&[desc("key1", &tag), desc("key2", &tag)]).await;
            let left = if count_rejected { 9 - n } else { 10 };
            let want = vec![over(key1, reset), ok(Some(key2), left, Some(reset))];
            assert_eq!(got.overall, "OVER_LIMIT", "{store:?} {door:?} {at} #{n}");
            assert_eq!(got.statuses, want, "{store:?} {door:?} {at} #{n} (count_rejected {count_rejected})");
            assert_eq!(got.header("RateLimit-Limit"), Some("1"), "{got:?}");
            assert_eq!(got.header("RateLimit-Remaining"), Some("0"), "{got:?}");
            assert_eq!(got.header("RateLimit-Reset"), Some(reset.to_string().as_str()), "{got:?}");
        }
        // key2 alone: what it said it had is what it has.
        let left = if count_rejected { 7 } else { 10 };
        let got = s.ask(&[desc("key2", &tag)]).await;
        assert_eq!(got.statuses, vec![ok(Some(key2), left - 1, Some(reset))], "{store:?} {door:?} {at}");
        assert_eq!(got.header("RateLimit-Remaining"), Some((left - 1).to_string().as_str()), "{got:?}");
        assert_eq!(got.header("RateLimit-Reset"), Some(reset.to_string().as_str()), "{got:?}");
    }
    // The window's last millisecond: state written now lives 1 ms (on Redis, 1 ms of real
    // time), so one request says it all. key1 asks for 2 of its 1 and refuses without storing
    // anything (it reports the 1 it has: nothing was taken); a fresh key2 reports its 20 (19
    // when charged), and both reset in 1 s.
    let (at, now) = last;
    s.clock.set(now);
    let tag = format!("{at}-{count_rejected}");
    let got = s.ask(&[Desc { hits: Some(2), ..desc("key1", &tag) }, desc("key2", &tag)]).await;
    let refused = Status { remaining: 1, ..over(key1, 1) };
    let left = if count_rejected { 19 } else { 20 };
    assert_eq!(got.statuses, vec![refused, ok(Some(key2), left, Some(1))], "{store:?} {door:?} {at}");
    assert_eq!(got.header("RateLimit-Reset"), Some("1"), "{got:?}");
}

async fn all(store: StoreKind) {
    for door in [Door::Grpc, Door::Json] {
        reset_for_every_unit(store.clone(), door).await;
        unlimited(store.clone(), door).await;
        others_of_a_refusal(store.clone(), door, false).await;
        others_of_a_refusal(store.clone(), door, true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_as_envoyproxy_ratelimit_on_memory() {
    all(StoreKind::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis server: tests/serve.sh starts one and runs this with TK_SERVE_TEST_REDIS"]
async fn answers_as_envoyproxy_ratelimit_on_redis() {
    all(StoreKind::from_env("TK_SERVE_TEST_REDIS", false)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis Cluster: tests/serve.sh starts one and runs this with TK_SERVE_TEST_CLUSTER"]
async fn answers_as_envoyproxy_ratelimit_on_redis_cluster() {
    all(StoreKind::from_env("TK_SERVE_TEST_CLUSTER", true)).await;
}
