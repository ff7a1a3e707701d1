//! The cluster router's commands that are not script calls (`core/src/redis/cluster/command.rs`)
//! on a real 3-master cluster:
//!
//! - **Every master** gets the function library at connect (`FUNCTION LOAD REPLACE`).
//! - **By slot**: `reset`'s `DEL` and raw commands run on the key's master (a script call's
//!   first key, not its SHA, straight away: no `MOVED`); a slot moved behind
//!   the store's back is followed (`MOVED`), a migrating one with `ASKING` (`ASK`), and the
//!   command runs once, on the right node.
//! - **Deterministic replay**: a round refused whole by a node that lost the slot goes again to
//!   the new owner, where the script runs once; the replayed keys' `DEL` (one per slot) leaves no
//!   key on any master. A round refused by a migrating slot's source (`ASK`) goes again to the
//!   target, with `ASKING`.
//! - **At most once**: a command whose reply is lost is `store_unavailable` and ran once; it is
//!   never sent again, and the next command answers.
#![cfg(feature = "redis")]

#[path = "support/redis_cluster.rs"]
mod redis_cluster;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::sync::Arc;

use redis_cluster::{RedisCluster, begin_migration, behind_proxy, cli, end_migration, keyslot, owner_and_other};
use throttlekit::redis::scripts::LIBRARY;
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore, Value};
use throttlekit::store::{Now, Store};
use throttlekit::{ErrorCode, FailPolicy, Limiter, Strategy};
use throttlekit_faultproxy::{Fault, Rule};

const NOW: i64 = 1_800_000_000_000;

fn connect(urls: Vec<String>, replay: bool) -> Arc<RedisStore> {
    let options = RedisOptions {
        urls,
        mode: RedisMode::Cluster,
        timeout_ms: 2000,
        deterministic_replay: replay,
        ..RedisOptions::default()
    };
    Arc::new(RedisStore::connect_blocking(options).expect("connect to the cluster"))
}

fn raw(store: &RedisStore, args: &[&str]) -> Value {
    store.command_blocking(args).expect("a raw command")
}

/// How many times the nodes of `cluster` ran `cmd` (refused calls, `MOVED` and `ASK`, are not
/// counted).
fn ran(cluster: &RedisCluster, cmd: &str) -> u64 {
    cluster.nodes.iter().map(|n| cluster.calls(n.port, cmd)).sum()
}

fn get(port: u16, key: &str) -> String {
    cli(port, &["get", key]).unwrap().trim().to_string()
}

/// `slot` handed (empty) from its master to another behind the store's back: (old, new) ports.
fn move_slot(cluster: &RedisCluster, key: &str) -> (u16, u16) {
    let slot = keyslot(cluster, key);
    let ((from_id, from), (to_id, to)) = owner_and_other(cluster, slot);
    begin_migration(slot, (&from_id, from), (&to_id, to));
    end_migration(cluster, slot, &to_id, to);
    (from, to)
}

#[test]
fn the_library_reaches_every_master_and_commands_reach_each_keys_master() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(cluster.urls(), false);
    assert!(store.uses_functions());
    for port in cluster.master_ports() {
        let listed = cli(port, &["function", "list", "libraryname", &LIBRARY.name]).unwrap();
        assert!(listed.contains(&LIBRARY.name), "master {port} lacks the library: {listed}");
    }

    // Keys over every master: each command runs on the key's master, with no redirect.
    for i in 0..30 {
        let key = format!("raw:{i}");
        assert_eq!(raw(&store, &["SET", &key, &i.to_string()]), Value::Okay);
        let ((_, owner), _) = owner_and_other(&cluster, keyslot(&cluster, &key));
        assert_eq!(get(owner, &key), i.to_string());
        assert_eq!(raw(&store, &["GET", &key]), Value::BulkString(i.to_string().into_bytes()));
        store.reset_sync(&key).unwrap();
        assert_eq!(cli(owner, &["exists", &key]).unwrap().trim(), "0", "{key} deleted on its master");
    }

    // MOVED: a raw INCR (not idempotent) runs once, on the new owner.
    let (from, to) = move_slot(&cluster, "moved:incr");
    let (f0, t0) = (cluster.calls(from, "incr"), cluster.calls(to, "incr"));
    assert_eq!(raw(&store, &["INCR", "moved:incr"]), Value::Int(1));
    assert_eq!((cluster.calls(from, "incr") - f0, cluster.calls(to, "incr") - t0), (0, 1));
    assert_eq!(get(to, "moved:incr"), "1");

    // MOVED: `reset`'s DEL deletes the key where it lives now.
    let (_, to) = move_slot(&cluster, "moved:del");
    cli(to, &["set", "moved:del", "x"]).unwrap();
    store.reset_sync("moved:del").unwrap();
    assert_eq!(cli(to, &["exists", "moved:del"]).unwrap().trim(), "0");

    // ASK: a migrating slot whose key is not on the source yet: ASKING, then the command, on
    // the target.
    let slot = keyslot(&cluster, "ask:set");
    let ((from_id, from), (to_id, to)) = owner_and_other(&cluster, slot);
    begin_migration(slot, (&from_id, from), (&to_id, to));
    let asking = cluster.calls(to, "asking");
    assert_eq!(raw(&store, &["SET", "ask:set", "here"]), Value::Okay);
    assert_eq!(cluster.calls(to, "asking") - asking, 1);
    end_migration(&cluster, slot, &to_id, to);
    assert_eq!(get(to, "ask:set"), "here");
}

/// How many times the nodes of `cluster` refused `cmd` before running it (`MOVED`, `ASK`:
/// `INFO commandstats`' `rejected_calls=`).
fn refused(cluster: &RedisCluster, cmd: &str) -> u64 {
    let refused_on = |port: u16| {
        let stats = cli(port, &["info", "commandstats"]).unwrap_or_default();
        redis_cluster::field(&stats, &format!("cmdstat_{cmd}"))
            .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("rejected_calls=").and_then(|n| n.parse().ok())))
            .unwrap_or(0)
    };
    cluster.nodes.iter().map(|n| refused_on(n.port)).sum()
}

#[test]
fn raw_commands_go_to_their_keys_master_wherever_the_key_stands() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(cluster.urls(), false);
    let owner = |key: &str| owner_and_other(&cluster, keyslot(&cluster, key)).0.1;
    let script = "return redis.call('GET', KEYS[1])";
    let sha = match raw(&store, &["SCRIPT", "LOAD", script]) {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("SCRIPT LOAD answered {other:?}"),
    };
    for port in cluster.master_ports() {
        cli(port, &["script", "load", script]).expect("the script on every master");
    }
    // A key whose master is not the master of the slot its command's first argument hashes to
    // (the script's SHA, the subcommand).
    let key = (0..)
        .map(|i| format!("route:{i}"))
        .find(|k| owner(k) != owner(&sha) && owner(k) != owner("ENCODING") && owner(k) != owner(script))
        .unwrap();
    assert_eq!(raw(&store, &["SET", &key, "v"]), Value::Okay);
    assert_eq!(raw(&store, &["HSET", "route:h", "f", "w"]), Value::Int(1));
    let cases: [(&str, Vec<&str>, Value); 5] = [
        ("get", vec!["GET", &key], Value::BulkString(b"v".to_vec())),
        ("hget", vec!["HGET", "route:h", "f"], Value::BulkString(b"w".to_vec())),
        ("evalsha", vec!["EVALSHA", &sha, "1", &key], Value::BulkString(b"v".to_vec())),
        ("eval", vec!["EVAL", script, "1", &key], Value::BulkString(b"v".to_vec())),
        ("object|encoding", vec!["OBJECT", "ENCODING", &key], Value::BulkString(b"embstr".to_vec())),
    ];
    for (stat, args, want) in cases {
        let before = refused(&cluster, stat);
        assert_eq!(raw(&store, &args), want, "{args:?}");
        assert_eq!(refused(&cluster, stat) - before, 0, "{args:?} went straight to its key's master (no MOVED)");
    }
}

/// A limiter on the replaying `store` whose failures are errors (prefix `replay`).
fn replay_limiter(store: &Arc<RedisStore>) -> Limiter {
    Limiter::builder(Strategy::gcra(10, 60_000, None).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::Raise)
        .prefix("replay")
        .build()
}

#[test]
fn replay_rounds_follow_moved_and_its_keys_are_deleted_on_every_master() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(cluster.urls(), true);
    let l = replay_limiter(&store);
    for i in 0..40 {
        assert!(l.check_sync_at(&format!("k{i}"), 1, NOW).unwrap().allowed);
    }

    // The whole round is refused by the node that lost the slot (its transaction aborted):
    // it goes again to the new owner, where the script runs once.
    let (from, to) = move_slot(&cluster, "replay:moved");
    let (f0, t0) = (cluster.calls(from, "eval"), cluster.calls(to, "eval"));
    let first = l.check_sync_at("moved", 1, NOW).expect("MOVED followed");
    assert!(first.allowed);
    assert_eq!((cluster.calls(from, "eval") - f0, cluster.calls(to, "eval") - t0), (0, 1));
    let second = block_on(l.check_at("moved", 1, Now::At(NOW)));
    assert_eq!((second.allowed, second.remaining), (true, first.remaining - 1), "the second call saw the first");

    let keys = |c: &RedisCluster| -> u64 {
        c.master_ports().iter().map(|&p| cli(p, &["dbsize"]).unwrap().trim().parse::<u64>().unwrap()).sum()
    };
    assert_eq!(keys(&cluster), 41);
    store.clear_replayed_blocking().unwrap();
    assert_eq!(keys(&cluster), 0, "every replayed key deleted, on every master");
}

#[test]
fn replay_rounds_follow_ask_to_a_migrating_slots_target() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(cluster.urls(), true);
    let l = replay_limiter(&store);
    // `replay:ask` lands on the source before the migration starts; `replay:ask2` never does.
    let before = l.check_sync_at("ask", 1, NOW).expect("a stable slot");
    let slot = keyslot(&cluster, "replay:ask");
    let ((from_id, from), (to_id, to)) = owner_and_other(&cluster, slot);
    let slot2 = keyslot(&cluster, "replay:ask2");
    let ((from2_id, from2), (to2_id, to2)) = owner_and_other(&cluster, slot2);
    begin_migration(slot2, (&from2_id, from2), (&to2_id, to2));

    // A key not on the source: the whole round answers `ASK`, and goes again to the target with
    // `ASKING` (before each command outside the transaction, and before its `MULTI`), where the
    // script runs once.
    let (f0, t0, asking) = (cluster.calls(from2, "eval"), cluster.calls(to2, "eval"), cluster.calls(to2, "asking"));
    let first = l.check_sync_at("ask2", 1, NOW).expect("ASK followed");
    assert!(first.allowed);
    assert_eq!((cluster.calls(from2, "eval") - f0, cluster.calls(to2, "eval") - t0), (0, 1), "ran once, on the target");
    assert!(cluster.calls(to2, "asking") - asking >= 1);
    let second = block_on(l.check_at("ask2", 1, Now::At(NOW)));
    assert_eq!((second.allowed, second.remaining), (true, first.remaining - 1), "the second call saw the first");
    assert_eq!((keys_in(from2, slot2), keys_in(to2, slot2)), (0, 1), "the key is on the target only");
    end_migration(&cluster, slot2, &to2_id, to2);

    // A key on the source whose deadline passed: the round's `DEL` deletes it there, so the
    // rest of the round answers `ASK` (the round's first reply is `DEL`'s count, not a
    // redirect); it goes again to the target, where the call starts afresh.
    begin_migration(slot, (&from_id, from), (&to_id, to));
    let later = NOW + 3_600_000;
    let t0 = cluster.calls(to, "eval");
    let fresh = l.check_sync_at("ask", 1, later).expect("ASK followed after the source's DEL");
    assert_eq!((fresh.allowed, fresh.remaining), (true, before.remaining), "a fresh key on the target");
    assert_eq!(cluster.calls(to, "eval") - t0, 1, "ran once, on the target");
    assert_eq!((keys_in(from, slot), keys_in(to, slot)), (0, 1), "the key is on the target only");
    end_migration(&cluster, slot, &to_id, to);
    store.clear_replayed_blocking().unwrap();
}

/// How many keys of `slot` the node on `port` holds (a plain `EXISTS` on a migrating slot's
/// source answers `ASK` for a key that is not there).
fn keys_in(port: u16, slot: u16) -> u64 {
    cli(port, &["cluster", "countkeysinslot", &slot.to_string()]).unwrap().trim().parse().unwrap()
}

/// Awaits `fut` on a runtime of its own.
fn block_on<T>(fut: impl Future<Output = throttlekit::Result<T>>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(fut).unwrap()
}

#[test]
fn a_command_whose_reply_is_lost_ran_once_and_is_never_sent_again() {
    let cluster = RedisCluster::start(3, 0);
    let proxy = behind_proxy(&cluster);
    let store = connect(proxy.routes().iter().map(|(l, _)| format!("redis://{l}")).collect(), false);
    let owner = |key: &str| owner_and_other(&cluster, keyslot(&cluster, key)).0.1;
    assert_eq!(raw(&store, &["SET", "lost:del", "x"]), Value::Okay);

    // `reset`'s DEL.
    let before = ran(&cluster, "del");
    proxy.set(vec![Rule::new(Fault::DropReply).commands(&["DEL"]).times(1)]);
    let e = store.reset_sync("lost:del").expect_err("the reply was dropped");
    assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}");
    proxy.clear();
    assert_eq!(ran(&cluster, "del") - before, 1, "DEL ran once, never sent again");
    // The next command to that master answers (on a new connection).
    assert_eq!(raw(&store, &["EXISTS", "lost:del"]), Value::Int(0));

    // A raw INCR.
    let before = ran(&cluster, "incr");
    proxy.set(vec![Rule::new(Fault::DropReply).commands(&["INCR"]).times(1)]);
    let e = store.command_blocking(&["INCR", "lost:incr"]).expect_err("the reply was dropped");
    assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}");
    proxy.clear();
    assert_eq!(ran(&cluster, "incr") - before, 1, "INCR ran once, never sent again");
    assert_eq!(raw(&store, &["GET", "lost:incr"]), Value::BulkString(b"1".to_vec()));
    assert_eq!(get(owner("lost:incr"), "lost:incr"), "1");
}
