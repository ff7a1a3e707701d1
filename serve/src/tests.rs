//! Config loading, matching and decisions, on the memory store and a manual clock.

use std::sync::Arc;

use throttlekit::{ManualClock, MemoryStore};

use crate::config::Config;
use crate::decide::{Code, Decider, DescriptorIn, FailMode, RequestIn, RequestLimits};
use crate::matching::find;

fn load(text: &str) -> Config {
    Config::from_texts(&[("test.yaml", text)]).unwrap()
}

fn load_err(text: &str) -> String {
    Config::from_texts(&[("bad.yaml", text)]).unwrap_err().to_string()
}

const BASIC: &str = r#"
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: path
    value: /login
    rate_limit: {unit: second, requests_per_unit: 1, name: login}
  - key: path
    value: "/api/*/items"
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: path
    value: "/api/*"
    rate_limit: {unit: hour, requests_per_unit: 9}
  - key: path
    rate_limit: {unit: day, requests_per_unit: 100}
  - key: tenant
    value: acme
    descriptors:
      - key: user
        rate_limit: {unit: minute, requests_per_unit: 5}
      - key: plan
        value: free
  - key: internal
    value: "true"
  - key: bulk
    rate_limit: {unlimited: true}
  - key: blocked
    rate_limit: {unit: minute, requests_per_unit: 0}
"#;

fn matched_rpu(c: &Config, entries: &[(&str, &str)]) -> Option<u64> {
    find(c, "edge", entries).and_then(|m| m.limits.limits.first().map(|l| l.requests_per_unit))
}

#[test]
fn exact_then_wildcards_in_order_then_key_alone() {
    let c = load(BASIC);
    assert_eq!(matched_rpu(&c, &[("path", "/login")]), Some(1));
    assert_eq!(matched_rpu(&c, &[("path", "/api/v1/items")]), Some(2), "first wildcard in order");
    assert_eq!(matched_rpu(&c, &[("path", "/api/v1/other")]), Some(9));
    assert_eq!(matched_rpu(&c, &[("path", "/else")]), Some(100), "the key alone");
    assert_eq!(matched_rpu(&c, &[("remote_address", "10.0.0.1")]), Some(3));
}

#[test]
fn depth_must_equal_and_whitelist_nodes_end_the_walk() {
    let c = load(BASIC);
    assert_eq!(matched_rpu(&c, &[("tenant", "acme"), ("user", "u1")]), Some(5));
    assert_eq!(matched_rpu(&c, &[("tenant", "acme")]), None, "shallower than the config");
    assert_eq!(matched_rpu(&c, &[("tenant", "acme"), ("user", "u1"), ("x", "y")]), None, "deeper");
    assert_eq!(matched_rpu(&c, &[("tenant", "acme"), ("plan", "free")]), None, "no limit, no children");
    assert_eq!(matched_rpu(&c, &[("internal", "true")]), None);
    assert_eq!(matched_rpu(&c, &[("tenant", "other"), ("user", "u1")]), None);
    assert!(find(&c, "unknown-domain", &[("path", "/login")]).is_none());
}

#[test]
fn counters_name_values_or_the_shared_pattern() {
    let c = load(
        r#"
domain: d
descriptors:
  - key: k
    value: "a*"
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: j
    value: "b*"
    rate_limit: {unit: minute, requests_per_unit: 1}
"#,
    );
    assert_eq!(find(&c, "d", &[("k", "a1")]).unwrap().counter, "k_a*");
    assert_eq!(find(&c, "d", &[("j", "b1")]).unwrap().counter, "j_b1");
}

#[test]
fn load_errors_name_the_file_and_the_path() {
    let e = load_err(
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1, bogus: 1}\n",
    );
    assert!(e.starts_with("bad.yaml: ") && e.contains("descriptors[0].rate_limit") && e.contains("bogus"), "{e}");
    let e = load_err("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: minute}\n");
    assert_eq!(e, "bad.yaml: descriptors[0].rate_limit: should not specify rate limit unit when unlimited");
    let e = load_err("domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n");
    assert_eq!(e, "bad.yaml: descriptors[1]: duplicate descriptor composite key 'k_v'");
    let e = load_err(
        "domain: d\ndescriptors:\n  - key: k\n    descriptors:\n      - key: a\n        rate_limit: {unit: minute, requests_per_unit: 1, name: x, replaces: [{name: x}]}\n",
    );
    assert_eq!(
        e,
        "bad.yaml: descriptors[0].descriptors[0].rate_limit.replaces[0]: replaces should not contain name of same descriptor"
    );
    let e = load_err(
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1, replaces: [{name: ''}]}\n",
    );
    assert!(e.contains("should not have an empty replaces entry"), "{e}");
    let e = load_err("domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n");
    assert_eq!(e, "bad.yaml: descriptors[0].share_threshold: share_threshold needs a value with a '*' wildcard");
    let e = load_err("descriptors: []\n");
    assert_eq!(e, "bad.yaml: domain: config file cannot have empty domain");
    let e = load_err("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n");
    assert!(e.contains("invalid rate limit unit 'fortnight'"), "{e}");
    let e = load_err("domain: d\ndescriptors:\n  - value: v\n");
    assert!(e.contains("descriptors[0].key: descriptor has empty key"), "{e}");
    let e = load_err(
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {period: 30s, requests_per_unit: 1, algorithm: leaky}\n",
    );
    assert!(e.contains("unknown algorithm 'leaky'"), "{e}");
    let e = load_err(
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1, burst: 4}\n",
    );
    assert!(e.contains("`burst` applies to gcra and token_bucket"), "{e}");
    let two = Config::from_texts(&[("a.yaml", "domain: d\n"), ("b.yaml", "domain: d\n")]).unwrap_err().to_string();
    assert_eq!(two, "b.yaml: domain: duplicate domain 'd' in config file");
}

#[test]
fn their_keys_are_all_accepted() {
    load(
        r#"
domain: d
descriptors:
  - key: k
    value: "v*"
    shadow_mode: true
    detailed_metric: true
    value_to_metric: true
    share_threshold: true
    quota_mode: false
    metadata: {owner: team-a}
    rate_limit: {unit: MINUTE, requests_per_unit: 1, name: n, replaces: [{name: m}]}
"#,
    );
}

const NOW: i64 = 1_700_000_040_000; // on a minute boundary

fn decider(clock: &Arc<ManualClock>) -> Decider {
    Decider {
        store: Arc::new(MemoryStore::new()),
        clock: clock.clone(),
        prefix: "tk".into(),
        fail: FailMode::Unavailable,
        shadow_global: false,
        count_rejected: false,
        headers: None,
        limits: RequestLimits::default(),
    }
}

fn req(domain: &str, descriptors: &[&[(&str, &str)]]) -> RequestIn {
    RequestIn {
        domain: domain.into(),
        descriptors: descriptors
            .iter()
            .map(|e| DescriptorIn {
                entries: e.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                ..DescriptorIn::default()
            })
            .collect(),
        hits_addend: 0,
    }
}

fn run(d: &Decider, c: &Config, r: &RequestIn) -> crate::decide::Outcome {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(d.decide(c, r)).unwrap()
}

#[test]
fn fixed_window_counts_and_resets_like_theirs() {
    let clock = Arc::new(ManualClock::new(NOW + 10_000));
    let d = decider(&clock);
    let c = load(BASIC);
    let r = req("edge", &[&[("remote_address", "10.0.0.1")]]);
    let codes: Vec<(Code, u32)> = (0..4)
        .map(|_| {
            let o = run(&d, &c, &r);
            (o.statuses[0].code, o.statuses[0].limit_remaining)
        })
        .collect();
    assert_eq!(codes, vec![(Code::Ok, 2), (Code::Ok, 1), (Code::Ok, 0), (Code::OverLimit, 0)]);
    let o = run(&d, &c, &r);
    assert_eq!(o.statuses[0].duration_until_reset_s, Some(50), "to the epoch-aligned minute's end");
    assert_eq!(o.statuses[0].current_limit.as_ref().unwrap().requests_per_unit, 3);
    clock.advance(50_000).unwrap();
    assert_eq!(run(&d, &c, &r).statuses[0].code, Code::Ok, "a new window");
}

#[test]
fn a_refused_descriptor_charges_no_other() {
    let clock = Arc::new(ManualClock::new(NOW));
    let d = decider(&clock);
    let c = load(BASIC);
    let both = req("edge", &[&[("remote_address", "10.0.0.1")], &[("path", "/login")]]);
    let login = req("edge", &[&[("path", "/login")]]);
    assert_eq!(run(&d, &c, &login).overall, Code::Ok);
    for _ in 0..3 {
        let o = run(&d, &c, &both);
        assert_eq!(o.overall, Code::OverLimit);
        assert_eq!(o.statuses[1].code, Code::OverLimit);
        assert_eq!(o.statuses[0].code, Code::Ok);
    }
    // remote_address was never charged by the refused requests: all 3 are left.
    let ip = req("edge", &[&[("remote_address", "10.0.0.1")]]);
    assert_eq!(run(&d, &c, &ip).statuses[0].limit_remaining, 2);

    // count_rejected restores envoyproxy/ratelimit's charging.
    let mut d2 = decider(&clock);
    d2.count_rejected = true;
    assert_eq!(run(&d2, &c, &login).overall, Code::Ok);
    for _ in 0..3 {
        assert_eq!(run(&d2, &c, &both).overall, Code::OverLimit);
    }
    assert_eq!(run(&d2, &c, &ip).statuses[0].code, Code::OverLimit);
}

#[test]
fn unlimited_unknown_zero_and_replaces() {
    let clock = Arc::new(ManualClock::new(NOW));
    let d = decider(&clock);
    let c = load(BASIC);
    for _ in 0..5 {
        let o = run(&d, &c, &req("edge", &[&[("bulk", "x")], &[("internal", "true")]]));
        assert_eq!(o.overall, Code::Ok);
        assert!(o.statuses.iter().all(|s| s.current_limit.is_none()));
        assert_eq!(run(&d, &c, &req("nope", &[&[("bulk", "x")]])).overall, Code::Ok);
    }
    let o = run(&d, &c, &req("edge", &[&[("blocked", "x")]]));
    assert_eq!((o.overall, o.statuses[0].limit_remaining), (Code::OverLimit, 0));

    let c = load(
        r#"
domain: r
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1, name: general}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 10, replaces: [{name: general}]}
"#,
    );
    for _ in 0..3 {
        let o = run(&d, &c, &req("r", &[&[("a", "1")], &[("b", "1")]]));
        assert_eq!(o.overall, Code::Ok);
        assert!(o.statuses[0].current_limit.is_none(), "replaced");
    }
    assert_eq!(run(&d, &c, &req("r", &[&[("a", "1")]])).overall, Code::Ok);
    assert_eq!(run(&d, &c, &req("r", &[&[("a", "1")]])).overall, Code::OverLimit);
}

#[test]
fn burst_plus_sustained_and_other_algorithms() {
    let clock = Arc::new(ManualClock::new(NOW));
    let d = decider(&clock);
    let c = load(
        r#"
domain: x
descriptors:
  - key: user
    rate_limits:
      - {period: 1s, requests_per_unit: 2, name: burst}
      - {unit: minute, requests_per_unit: 3, algorithm: sliding_window_log, name: sustained}
  - key: g
    rate_limit: {period: 30s, requests_per_unit: 1, algorithm: gcra, burst: 2}
"#,
    );
    let r = req("x", &[&[("user", "u")]]);
    let codes: Vec<Code> = (0..3).map(|_| run(&d, &c, &r).overall).collect();
    assert_eq!(codes, vec![Code::Ok, Code::Ok, Code::OverLimit], "the burst limit binds");
    clock.advance(1_000).unwrap();
    let o = run(&d, &c, &r);
    assert_eq!((o.overall, o.statuses[0].current_limit.as_ref().unwrap().name.as_str()), (Code::Ok, "sustained"));
    assert_eq!(run(&d, &c, &r).overall, Code::OverLimit, "3 per minute, the refused one not counted");
    let g = req("x", &[&[("g", "1")]]);
    let codes: Vec<Code> = (0..3).map(|_| run(&d, &c, &g).overall).collect();
    assert_eq!(codes, vec![Code::Ok, Code::Ok, Code::OverLimit]);
    let o = run(&d, &c, &g);
    assert_eq!(o.statuses[0].current_limit.as_ref().unwrap().unit, None, "30 s is no proto unit");
}

#[test]
fn shadow_mode_hits_addend_and_overrides() {
    let clock = Arc::new(ManualClock::new(NOW));
    let d = decider(&clock);
    let c = load(
        r#"
domain: s
descriptors:
  - key: k
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: e
    rate_limit: {unit: minute, requests_per_unit: 5}
"#,
    );
    for _ in 0..3 {
        let o = run(&d, &c, &req("s", &[&[("k", "1")], &[("e", "1")]]));
        assert_eq!(o.overall, Code::Ok);
    }
    let o = run(&d, &c, &req("s", &[&[("k", "1")], &[("e", "1")]]));
    assert_eq!(o.shadow_over, 1);
    assert_eq!(o.statuses[1].limit_remaining, 1, "the shadow limit did not stop e being charged");

    let mut r = req("s", &[&[("e", "2")]]);
    r.hits_addend = 4;
    assert_eq!(run(&d, &c, &r).statuses[0].limit_remaining, 1);
    r.descriptors[0].hits_addend = Some(0);
    assert_eq!(run(&d, &c, &r).statuses[0].limit_remaining, 1, "0 looks without consuming");
    r.descriptors[0].hits_addend = Some(2);
    assert_eq!(run(&d, &c, &r).overall, Code::OverLimit);

    let mut o = req("s", &[&[("anything", "x")]]);
    o.descriptors[0].limit_override = Some((1, 2));
    assert_eq!(run(&d, &c, &o).overall, Code::Ok);
    assert_eq!(run(&d, &c, &o).overall, Code::OverLimit);

    let mut g = decider(&clock);
    g.shadow_global = true;
    let r = req("s", &[&[("e", "3")]]);
    let codes: Vec<Code> = (0..7).map(|_| run(&g, &c, &r).overall).collect();
    assert!(codes.iter().all(|c| *c == Code::Ok));
}

#[test]
fn hostile_requests_are_refused_with_reasons() {
    let clock = Arc::new(ManualClock::new(NOW));
    let d = decider(&clock);
    let c = load(BASIC);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let err = |r: RequestIn| rt.block_on(d.decide(&c, &r)).unwrap_err();
    let many: Vec<&[(&str, &str)]> = vec![&[("k", "v")]; 10_000];
    assert!(format!("{:?}", err(req("edge", &many))).contains("10000 descriptors"));
    let big = "x".repeat(1 << 20);
    assert!(format!("{:?}", err(req("edge", &[&[("k", big.as_str())]]))).contains("longer than"));
    assert!(format!("{:?}", err(req("", &[&[("k", "v")]]))).contains("domain must not be empty"));
    assert!(format!("{:?}", err(req("edge", &[]))).contains("must not be empty"));
}

/// A store that can never answer, as a Redis that went away.
struct DownStore;

impl throttlekit::Store for DownStore {
    fn apply<'a>(
        &'a self,
        _key: &'a str,
        _now: throttlekit::store::Now,
        _t: throttlekit::store::Transform<'a>,
    ) -> throttlekit::store::BoxFuture<'a, throttlekit::Result<throttlekit::store::Reply>> {
        Box::pin(async { Err(throttlekit::Error::store("connection refused")) })
    }
    fn apply_multi<'a>(
        &'a self,
        _rule: throttlekit::Rule,
        _dims: &'a [throttlekit::store::DimensionCall<'a>],
        _now: throttlekit::store::Now,
    ) -> throttlekit::store::BoxFuture<'a, throttlekit::Result<throttlekit::store::MultiReply>> {
        Box::pin(async { Err(throttlekit::Error::store("connection refused")) })
    }
    fn reset<'a>(&'a self, _key: &'a str) -> throttlekit::store::BoxFuture<'a, throttlekit::Result<()>> {
        Box::pin(async { Err(throttlekit::Error::store("connection refused")) })
    }
}

#[test]
fn fail_policy_unavailable_allow_and_deny() {
    let clock = Arc::new(ManualClock::new(NOW));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let c = load(BASIC);
    let r = req("edge", &[&[("remote_address", "1")]]);
    let mut d = decider(&clock);
    d.store = Arc::new(DownStore);
    let e = rt.block_on(d.decide(&c, &r)).unwrap_err();
    assert!(matches!(&e, crate::decide::DecideError::Unavailable(m) if m.contains("connection refused")), "{e:?}");
    d.fail = FailMode::Allow;
    let o = rt.block_on(d.decide(&c, &r)).unwrap();
    assert!(o.overall == Code::Ok && o.fallback);
    d.fail = FailMode::Deny;
    let o = rt.block_on(d.decide(&c, &r)).unwrap();
    assert!(o.overall == Code::OverLimit && o.fallback);
    // A request that meets no limit needs no store: OK whatever the policy.
    d.fail = FailMode::Unavailable;
    assert_eq!(rt.block_on(d.decide(&c, &req("edge", &[&[("internal", "true")]]))).unwrap().overall, Code::Ok);
}

/// The gRPC threads' sockets all listen on the port the first one picked (`SO_REUSEPORT`), and
/// each accepts connections: a port chosen by the kernel is shared, not picked once per thread.
#[test]
fn grpc_listeners_share_one_port() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    let _in_runtime = rt.enter();
    let ls = crate::workers::listeners("127.0.0.1:0".parse().unwrap(), 3).unwrap();
    assert_eq!(ls.len(), 3);
    let addr = ls[0].local_addr().unwrap();
    assert_ne!(addr.port(), 0);
    assert!(ls.iter().all(|l| l.local_addr().unwrap() == addr));
    let clients: Vec<_> = (0..8).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    let mut accepted = 0;
    for l in &ls {
        l.set_nonblocking(true).unwrap();
        while l.accept().is_ok() {
            accepted += 1;
        }
    }
    assert_eq!(accepted, clients.len());
}

/// The gRPC server with its small codec ([`crate::rls_server`]): a response far larger than
/// the codec's starting buffer arrives whole, an unknown method is `UNIMPLEMENTED`, and the
/// decoding limit still refuses a larger request.
#[test]
fn rls_server_grows_its_buffer_and_keeps_the_limits() {
    use envoy_types::pb::envoy::config::core::v3::HeaderValue;
    use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::DescriptorStatus;
    use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
    use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
    use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};

    /// Answers one status per descriptor and a header per descriptor, named after its value.
    struct Echo;
    #[tonic::async_trait]
    impl RateLimitService for Echo {
        async fn should_rate_limit(
            &self,
            request: tonic::Request<RateLimitRequest>,
        ) -> Result<tonic::Response<RateLimitResponse>, tonic::Status> {
            Ok(tonic::Response::new(echo(&request.into_inner())))
        }
    }
    fn echo(r: &RateLimitRequest) -> RateLimitResponse {
        RateLimitResponse {
            overall_code: 1,
            statuses: r.descriptors.iter().map(|_| DescriptorStatus { code: 1, ..Default::default() }).collect(),
            response_headers_to_add: r
                .descriptors
                .iter()
                .map(|d| HeaderValue { key: "x-echo".into(), value: d.entries[0].value.clone(), ..Default::default() })
                .collect(),
            ..Default::default()
        }
    }
    fn request(n: usize, value_bytes: usize) -> RateLimitRequest {
        let d = |i: usize| envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor {
            entries: vec![envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::Entry {
                key: "k".into(),
                value: format!("{i:0value_bytes$}"),
            }],
            ..Default::default()
        };
        RateLimitRequest { domain: "d".into(), descriptors: (0..n).map(d).collect(), hits_addend: 0 }
    }

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let service = crate::rls_server::RlsServer::new(Echo).max_decoding_message_size(16 * 1024);
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        let channel =
            tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
        let mut client = RateLimitServiceClient::new(channel.clone());

        // 40 statuses and 40 headers of 100 bytes: ~4.5 KB, 9x the starting buffer.
        let big = request(40, 100);
        let answer = client.should_rate_limit(big.clone()).await.unwrap().into_inner();
        assert!(prost::Message::encoded_len(&answer) > 8 * crate::rls_server::BUFFER_BYTES);
        assert_eq!(answer, echo(&big));
        // A small one after it on the same connection.
        let small = request(1, 3);
        assert_eq!(client.should_rate_limit(small.clone()).await.unwrap().into_inner(), echo(&small));

        // Over the decoding limit (~20 KB against 16 KiB): refused, not decided.
        let err = client.should_rate_limit(request(180, 100)).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::OutOfRange, "{err:?}");

        // Another method of the service's path: UNIMPLEMENTED.
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap();
        let path =
            tonic::codegen::http::uri::PathAndQuery::from_static("/envoy.service.ratelimit.v3.RateLimitService/Other");
        let err = grpc
            .unary::<_, RateLimitResponse, _>(
                tonic::Request::new(small),
                path,
                tonic_prost::ProstCodec::<RateLimitRequest, RateLimitResponse>::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unimplemented, "{err:?}");
    });
}

/// A counter named twice in one request is one dimension charged with both costs, whether the
/// request is small (its keys found by a scan) or has more than eight descriptors (a map).
#[test]
fn a_counter_named_twice_is_charged_both_costs_once_in_small_and_large_requests() {
    let c = load("domain: edge\ndescriptors:\n  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 3}\n");
    for others in [0usize, 8] {
        let clock = Arc::new(ManualClock::new(NOW));
        let d = decider(&clock);
        let values: Vec<String> = (0..others).map(|i| format!("other-{i}")).collect();
        let mut descriptors: Vec<Vec<(&str, &str)>> = vec![vec![("a", "1")], vec![("a", "1")]];
        descriptors.extend(values.iter().map(|v| vec![("a", v.as_str())]));
        let slices: Vec<&[(&str, &str)]> = descriptors.iter().map(Vec::as_slice).collect();
        let twice = req("edge", &slices);
        let codes = |o: &crate::decide::Outcome| o.statuses.iter().map(|s| s.code).collect::<Vec<_>>();
        let first = run(&d, &c, &twice);
        assert_eq!(codes(&first), vec![Code::Ok; 2 + others], "{others} others: 2 of 3 charged");
        assert_eq!(first.statuses[0].limit_remaining, 1, "{others} others");
        // The second needs 2 of the 1 left: both statuses refused, nothing charged.
        let second = run(&d, &c, &twice);
        assert_eq!(&codes(&second)[..2], &[Code::OverLimit, Code::OverLimit], "{others} others");
        let once = run(&d, &c, &req("edge", &[&[("a", "1")]]));
        assert_eq!((once.overall, once.statuses[0].limit_remaining), (Code::Ok, 0), "{others} others");
    }
}
