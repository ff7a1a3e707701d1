//! The store under an ACL user with exactly `throttlekit::redis::acl::acl_rules` (the rules
//! `docs/redis.md` prints): every script (each strategy, the shaper, the fused multi check,
//! the server clock) and `reset` work, through `FCALL` and through `EVALSHA`; a key outside
//! the user's pattern is refused, so the rules are no wider than they say.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;

use std::sync::Arc;

use redis_server::{RedisServer, calls, cli};
use throttlekit::redis::acl::acl_rules;
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore, Scripting};
use throttlekit::{
    Dimension, ErrorCode, FailPolicy, LeakyBucketOptions, Limiter, MultiLimiter, Rule, Shaper, Strategy,
};

const PREFIX: &str = "api";

/// Creates user `name` with password `pw` and exactly the documented rules.
fn create_user(port: u16, name: &str, scripting: Scripting) {
    let rules = acl_rules(PREFIX, scripting, RedisMode::Standalone);
    let mut args = vec!["acl", "setuser", name, ">pw"];
    args.extend(rules.iter().map(String::as_str));
    cli(port, &args).expect("ACL SETUSER");
}

fn connect(port: u16, user: &str, scripting: Scripting) -> Arc<RedisStore> {
    let url = format!("redis://{user}:pw@127.0.0.1:{port}");
    let options = RedisOptions { urls: vec![url], scripting, timeout_ms: 5000, ..RedisOptions::default() };
    Arc::new(RedisStore::connect_blocking(options).expect("connect as the ACL user"))
}

/// Runs every script the store has, with errors raised (no fail policy hides them).
fn exercise(store: Arc<RedisStore>) {
    let specs = [
        r#"{"kind": "gcra", "options": {"limit": 5, "periodMs": 1000}}"#,
        r#"{"kind": "tokenBucket", "options": {"capacity": 4, "refillPerSec": 2}}"#,
        r#"{"kind": "fixedWindow", "options": {"limit": 3, "windowMs": 1000}}"#,
        r#"{"kind": "slidingWindow", "options": {"limit": 4, "windowMs": 1000}}"#,
        r#"{"kind": "slidingWindowLog", "options": {"limit": 3, "windowMs": 1000}}"#,
        r#"{"kind": "quota", "options": {"limit": 5, "resetCadence": "calendar-day"}}"#,
    ];
    for (i, spec) in specs.iter().enumerate() {
        for server_clock in [false, true] {
            let l = Limiter::builder(Strategy::from_json(spec).unwrap())
                .store(store.clone())
                .prefix(PREFIX)
                .server_clock(server_clock)
                .fail_policy(FailPolicy::Raise)
                .build();
            let key = format!("user{i}");
            assert!(l.check_sync(&key, 1).unwrap().allowed, "{spec}");
            l.peek_sync(&key).unwrap();
            l.forecast_sync(&key, 1).unwrap();
            l.reset_sync(&key).unwrap();
        }
    }
    let shaper = Shaper::new(&LeakyBucketOptions { rate_per_sec: 10.0, max_queue_ms: 1000.0 })
        .unwrap()
        .with_store(store.clone())
        .with_prefix(PREFIX);
    shaper.reserve_sync("out", 1).unwrap();
    let multi = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("user", Strategy::fixed_window(3, 1000).unwrap()),
            Dimension::new("ip", Strategy::sliding_window_log(3, 1000).unwrap()),
        ],
    )
    .unwrap()
    .with_store(store)
    .with_prefix(PREFIX)
    .with_fail_policy(FailPolicy::Raise);
    assert!(multi.check_sync(&["u", "1.2.3.4"], 1).unwrap().decision.allowed);
}

#[test]
fn the_documented_acl_is_enough_for_every_script_with_functions_and_with_scripts() {
    let server = RedisServer::start();
    create_user(server.port, "tk_auto", Scripting::Auto);
    create_user(server.port, "tk_fn", Scripting::Functions);
    create_user(server.port, "tk_eval", Scripting::Eval);
    let auto = connect(server.port, "tk_auto", Scripting::Auto);
    assert!(auto.uses_functions(), "auto under the ACL loads the library");
    exercise(auto);
    exercise(connect(server.port, "tk_fn", Scripting::Functions));
    let fcalls = calls(server.port, "fcall");
    assert!(fcalls > 0);
    exercise(connect(server.port, "tk_eval", Scripting::Eval));
    assert!(calls(server.port, "evalsha") > 0);
    assert_eq!(calls(server.port, "fcall"), fcalls, "the eval user ran no FCALL");
}

#[test]
fn a_key_outside_the_pattern_is_refused() {
    let server = RedisServer::start();
    create_user(server.port, "tk", Scripting::Auto);
    let store = connect(server.port, "tk", Scripting::Auto);
    let l = Limiter::builder(Strategy::gcra(5, 1000, None).unwrap())
        .store(store)
        .prefix("elsewhere")
        .fail_policy(FailPolicy::Raise)
        .build();
    let err = l.check_sync("k", 1).expect_err("the key is outside ~api:*");
    assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
    assert!(err.message().contains("NOPERM") || err.message().contains("permission"), "{err}");
}
