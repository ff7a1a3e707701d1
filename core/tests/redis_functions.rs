//! Redis Functions against a real Redis 7: under `auto` (the default) the store loads
//! `lua/` as one function library and every path (blocking, async, fused multi) runs `FCALL`,
//! never `EVALSHA`, as `INFO commandstats` proves; `eval` forces `EVALSHA`; a flushed library is
//! reloaded by the call that finds it missing; a server that refuses `FUNCTION` (here an ACL
//! user without it) gets scripts under `auto` and a clear `store_unavailable` under
//! `functions`; and both ways decide identically.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;

use std::sync::Arc;

use redis_server::{RedisServer, calls, cli};
use throttlekit::redis::{RedisOptions, RedisStore, Scripting};
use throttlekit::store::Now;
use throttlekit::{Dimension, ErrorCode, Limiter, MultiLimiter, Rule, Strategy};

const NOW: i64 = 1_800_000_000_000;

fn store(url: String, scripting: Scripting) -> Arc<RedisStore> {
    let options = RedisOptions { urls: vec![url], scripting, timeout_ms: 5000, ..RedisOptions::default() };
    Arc::new(RedisStore::connect_blocking(options).expect("connect"))
}

fn strategies() -> Vec<Strategy> {
    [
        r#"{"kind": "gcra", "options": {"limit": 5, "periodMs": 1000, "burst": 3}}"#,
        r#"{"kind": "tokenBucket", "options": {"capacity": 4, "refillPerSec": 2}}"#,
        r#"{"kind": "fixedWindow", "options": {"limit": 3, "windowMs": 1000}}"#,
        r#"{"kind": "slidingWindow", "options": {"limit": 4, "windowMs": 1000}}"#,
        r#"{"kind": "slidingWindowLog", "options": {"limit": 3, "windowMs": 1000}}"#,
        r#"{"kind": "quota", "options": {"limit": 5, "resetCadence": "calendar-day"}}"#,
    ]
    .iter()
    .map(|s| Strategy::from_json(s).expect("a valid spec"))
    .collect()
}

/// Every strategy's decisions for a fixed timeline, through blocking and async calls and a fused
/// multi check: the same list whichever way the scripts run.
fn timeline(store: Arc<RedisStore>, prefix: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut out = Vec::new();
    for (i, s) in strategies().into_iter().enumerate() {
        let l = Limiter::builder(s).store(store.clone()).prefix(format!("{prefix}{i}")).build();
        for step in 0..12i64 {
            let t = NOW + step * 150;
            out.push(format!("{:?}", l.check_sync_at("k", 1 + (step % 2) as u64, t).unwrap()));
            out.push(format!("{:?}", rt.block_on(l.check_at("a", 1, Now::At(t))).unwrap()));
        }
    }
    let m = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("user", Strategy::fixed_window(3, 1000).unwrap()),
            Dimension::new("ip", Strategy::gcra(4, 1000, None).unwrap()),
        ],
    )
    .unwrap()
    .with_store(store)
    .with_prefix(prefix);
    for step in 0..8i64 {
        out.push(format!("{:?}", rt.block_on(m.check_at(&["u", "ip"], 1, Now::At(NOW + step * 100))).unwrap()));
    }
    out
}

#[test]
fn auto_runs_fcall_on_every_path_and_eval_runs_evalsha_with_the_same_decisions() {
    let server = RedisServer::start();
    let functions = timeline(store(server.url(), Scripting::Auto), "fn");
    let n = functions.len() as u64;
    assert_eq!(calls(server.port, "fcall"), n, "every call of the timeline was one FCALL");
    assert_eq!(calls(server.port, "evalsha") + calls(server.port, "eval"), 0);
    assert_eq!(calls(server.port, "function|load"), 1, "the library is loaded once, at connect");

    let scripts = timeline(store(server.url(), Scripting::Eval), "ev");
    assert_eq!(calls(server.port, "evalsha"), n, "every call of the timeline was one EVALSHA");
    assert_eq!(calls(server.port, "fcall"), n, "no FCALL from the eval store");
    assert_eq!(functions, scripts, "functions and scripts decide differently");
}

#[test]
fn a_flushed_library_is_reloaded_by_the_call_that_misses_it() {
    let server = RedisServer::start();
    let s = store(server.url(), Scripting::Functions);
    let l = Limiter::builder(Strategy::fixed_window(3, 60_000).unwrap()).store(s).build();
    assert_eq!(l.check_sync_at("k", 1, NOW).unwrap().remaining, 2);
    cli(server.port, &["function", "flush"]).expect("FUNCTION FLUSH");
    assert_eq!(l.check_sync_at("k", 1, NOW).unwrap().remaining, 1, "answered after the flush");
    assert_eq!(l.check_sync_at("k", 1, NOW).unwrap().remaining, 0);
    assert_eq!(calls(server.port, "function|load"), 2, "loaded at connect, then once after the flush");
    assert_eq!(calls(server.port, "fcall"), 4, "three calls, one of them retried after loading");
    assert_eq!(calls(server.port, "evalsha") + calls(server.port, "eval"), 0);
}

#[test]
fn a_server_that_refuses_function_gets_scripts_under_auto_and_an_error_under_functions() {
    let server = RedisServer::start();
    cli(server.port, &["acl", "setuser", "nofn", "on", ">pw", "~*", "+@all", "-function"]).expect("ACL SETUSER");
    let url = format!("redis://nofn:pw@127.0.0.1:{}", server.port);
    let l = Limiter::builder(Strategy::gcra(5, 1000, None).unwrap()).store(store(url.clone(), Scripting::Auto)).build();
    assert!(l.check_sync_at("k", 1, NOW).unwrap().allowed);
    assert_eq!(calls(server.port, "fcall"), 0);
    assert_eq!(calls(server.port, "evalsha"), 1);
    let options = RedisOptions { urls: vec![url], scripting: Scripting::Functions, ..RedisOptions::default() };
    let err = RedisStore::connect_blocking(options).expect_err("functions forced on a server that refuses them");
    assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
    assert!(err.message().contains("FUNCTION LOAD"), "{err}");
}
