//! The memory store's own unit tests: entries, probes, and where keys sit.

use std::collections::VecDeque;
use std::sync::Arc;

use super::hint::PREFETCH_ENTRIES;
use super::*;
use crate::state::{Log, Slot};

fn roundtrip(state: Option<State>) {
    for key in ["k", "exactly-twenty-two-by", "a key longer than twenty-two bytes, boxed"] {
        let probe = Probe::new(key.as_bytes());
        let mut e = Entry::new(&probe, 7, state.clone());
        assert!(e.matches(&probe), "{key}");
        assert_eq!(e.key(), key.as_bytes());
        assert!(!e.matches(&Probe::new(b"other")));
        assert_eq!(e.take_state(), state);
        e.put_state(state.clone());
        assert_eq!(e.take_state(), state);
        e.put_state(state.clone());
        assert!(e.untouch());
        assert!(!e.untouch());
        assert!(e.matches(&probe), "the meta byte is not part of the key");
    }
}

#[test]
fn the_fast_probe_encodes_like_the_byte_copy() {
    let text = b"0123456789abcdefghijklmnopqrstuvwxyz";
    for len in 0..=INLINE {
        let key = &text[..len];
        let mut bytes = [0u8; 24];
        bytes[..len].copy_from_slice(key);
        bytes[INLINE] = len as u8;
        match Probe::new(key) {
            Probe::Inline(w) => assert_eq!(w, words(bytes), "len {len}"),
            Probe::Heap(_) => panic!("len {len} is inline"),
        }
    }
}

#[test]
fn the_joined_probe_encodes_like_the_joined_key() {
    let text = "0123456789abcdefghijklmnopqrstuvwxyz";
    for plen in 1..=INLINE {
        for klen in 0..=INLINE {
            let (prefix, key) = (&text[..plen], &text[10..10 + klen]);
            let joined = crate::key::join(prefix, key);
            match (Probe::joined(prefix.as_bytes(), key.as_bytes()), Probe::new(joined.as_bytes())) {
                (Some(Probe::Inline(a)), Probe::Inline(b)) => assert_eq!(a, b, "{prefix:?} + {key:?}"),
                (None, Probe::Heap(_)) => {}
                _ => panic!("{prefix:?} + {key:?}: inline exactly when the joined key is"),
            }
        }
    }
}

#[test]
fn every_state_shape_survives_an_entry() {
    roundtrip(None);
    roundtrip(Some(State::Tat(1.5e12 + 0.25)));
    roundtrip(Some(State::Bucket { tokens: -0.0, last: i64::MIN }));
    roundtrip(Some(State::Counter { start: -5, count: u64::MAX }));
    roundtrip(Some(State::Ring(vec![Slot { tick: 3, count: 4 }, Slot::EMPTY].into_boxed_slice())));
    roundtrip(Some(State::Log(Log::from(VecDeque::from([(1, 2), (3, 4)])))));
}

#[test]
fn an_entry_changes_shape_without_leaking() {
    let probe = Probe::new(b"k");
    let mut e = Entry::new(&probe, 0, Some(State::Log(Log::from(VecDeque::from([(1, 1)])))));
    let s = e.take_state();
    assert_eq!(s, Some(State::Log(Log::from(VecDeque::from([(1, 1)])))));
    e.put_state(Some(State::Ring(vec![Slot::EMPTY; 3].into_boxed_slice())));
    let s = e.take_state();
    e.put_state(s);
    e.clear_state();
    assert_eq!(e.take_state(), None);
    assert_eq!(std::mem::size_of::<Entry>(), 48);
}

/// What [`Hint::prefetch`] relies on: with 100k keys (the bench's row), most keys sit
/// within the [`PREFETCH_ENTRIES`] buckets it fetches from their home bucket on. Deterministic
/// (a fixed hash seed); the bound holds at any shard count, since even a table at hashbrown's
/// fullest (7/8) keeps about 82% of its keys that close.
#[test]
fn most_keys_sit_within_the_prefetched_buckets() {
    let store = MemoryStore::new();
    let s = crate::Strategy::gcra(3600, 3_600_000, Some(1_000_000)).unwrap();
    for i in 0..100_000u64 {
        let key = format!("user:{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        store.apply_sync(&key, Now::At(0), Transform::Check { strategy: &s, cost: 1 }).unwrap();
    }
    // Keys by distance from their home bucket: 0, 1, ..., PREFETCH_ENTRIES or more.
    let mut by_distance = [0usize; PREFETCH_ENTRIES + 1];
    for shard in store.shards.iter() {
        let data = shard.map.lock();
        let mask = data.table.num_buckets().wrapping_sub(1);
        for index in 0..data.table.num_buckets() {
            if let Some(e) = data.table.get_bucket(index) {
                let home = store.hash_entry(e) as usize & mask;
                by_distance[(index.wrapping_sub(home) & mask).min(PREFETCH_ENTRIES)] += 1;
            }
        }
    }
    let total: usize = by_distance.iter().sum();
    assert_eq!(total, 100_000);
    let within = total - by_distance[PREFETCH_ENTRIES];
    println!("keys by distance from home (0..{PREFETCH_ENTRIES}, more): {by_distance:?}");
    assert!(within * 10 >= total * 8, "{by_distance:?}");
}

#[test]
fn keys_of_every_length_are_found_and_distinct() {
    let store = MemoryStore::new();
    let s = crate::Strategy::fixed_window(5, 1000).unwrap();
    let keys: Vec<String> = (0..60).map(|n| "x".repeat(n)).collect();
    for k in &keys {
        store.apply_sync(k, Now::At(0), Transform::Check { strategy: &s, cost: 2 }).unwrap();
    }
    for k in &keys {
        let d = store.apply_sync(k, Now::At(0), Transform::Peek { strategy: &s }).unwrap().decision().unwrap();
        assert_eq!(d.remaining, 3, "{k:?}");
    }
    assert_eq!(store.len(), keys.len());
}

/// The log fast path against the generic transition on an `Option<State>` kept beside it, over
/// a seeded mix of costs, clock steps (backward jumps included), expiries, keys of another
/// shape and resets: every decision and every stored log is the same.
#[test]
fn the_log_fast_path_decides_and_stores_like_the_generic_transition() {
    let strategy = crate::Strategy::sliding_window_log(5, 100).unwrap();
    let other = crate::Strategy::fixed_window(3, 50).unwrap();
    let store = MemoryStore::new();
    let mut model: [(Option<State>, i64); 3] = Default::default();
    let keys = ["a", "b", "a key longer than twenty-two bytes"];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut now = 1_000i64;
    for step in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % 3) as usize;
        now += match (x >> 8) % 16 {
            0 => -30,
            1 => 150, // past the window: the entry expires
            n => (n as i64) % 7,
        };
        let cost = 1 + (x >> 16) % 7; // sometimes over the limit on its own
        let (slot, deadline) = &mut model[k];
        if now > *deadline {
            *slot = None;
        }
        match (x >> 24) % 64 {
            0 => {
                store.reset_sync(keys[k]).unwrap();
                *slot = None;
            }
            1 => {
                // Another shape on the same key, through the generic path on both sides.
                let d = store.apply_sync(keys[k], Now::At(now), Transform::Check { strategy: &other, cost }).unwrap();
                let s = other.check(slot, now, cost, true);
                assert_eq!(d, Reply::Decision(s.reply), "step {step}");
                if let Some(ttl) = s.ttl_ms {
                    *deadline = now + ttl;
                }
            }
            _ => {
                let d =
                    store.apply_sync(keys[k], Now::At(now), Transform::Check { strategy: &strategy, cost }).unwrap();
                let s = strategy.check(slot, now, cost, true);
                assert_eq!(d, Reply::Decision(s.reply), "step {step}");
                if let Some(ttl) = s.ttl_ms {
                    *deadline = now + ttl;
                }
            }
        }
        let stored = store.apply_sync(keys[k], Now::At(now), Transform::Peek { strategy: &strategy }).unwrap();
        assert_eq!(stored, Reply::Decision(strategy.peek(slot.as_ref(), now)), "step {step}");
    }
}

/// A fresh key denied outright (cost over the limit) stores nothing, and an expired key denied
/// outright is dropped, as on the generic path.
#[test]
fn a_denied_log_check_leaves_no_stateless_entry() {
    let strategy = crate::Strategy::sliding_window_log(2, 100).unwrap();
    let store = MemoryStore::new();
    let check =
        |now, cost| store.apply_sync("k", Now::At(now), Transform::Check { strategy: &strategy, cost }).unwrap();
    assert!(!check(0, 3).decision().unwrap().allowed);
    assert_eq!(store.len(), 0);
    assert!(check(0, 2).decision().unwrap().allowed);
    assert_eq!(store.len(), 1);
    assert!(!check(50, 1).decision().unwrap().allowed, "still full");
    assert_eq!(store.len(), 1);
    assert!(!check(101, 3).decision().unwrap().allowed);
    assert_eq!(store.len(), 0, "expired, then denied: nothing left to keep");
}

/// Keys whose state lapses between visits (GCRA back at full capacity) stay in the table:
/// a cycle over more keys than a small table holds, each visit after the key's expiry, ends
/// with every key held, rewritten in place. (Swept at once, as before, the tables stayed at
/// their first size and every visit re-inserted its key.)
#[test]
fn keys_that_lapse_between_visits_are_kept_not_swept() {
    let store = MemoryStore::new();
    let gcra = crate::Strategy::gcra(1_000_000, 1000, Some(1_000_000)).unwrap(); // TTL 1 ms
    let keys: Vec<String> = (0..20_000).map(|i| format!("user:{i}")).collect();
    // 100 visits a ms: a pass takes 200 ms, so every key has expired (1 ms) by its next visit,
    // which comes well within the grace.
    for (i, k) in keys.iter().cycle().take(3 * keys.len()).enumerate() {
        let now = i as i64 / 100;
        let d = store.apply_sync(k, Now::At(now), Transform::Check { strategy: &gcra, cost: 1 }).unwrap();
        assert!(d.decision().unwrap().allowed);
    }
    assert_eq!(store.len(), keys.len());
}

/// Keys nobody touches again are still swept before a table grows, once their grace is over.
#[test]
fn keys_expired_past_the_grace_are_swept_before_a_table_grows() {
    let store = MemoryStore::new();
    let gcra = crate::Strategy::gcra(1_000_000, 1000, Some(1_000_000)).unwrap(); // TTL 1 ms
    let mut now = 0;
    for i in 0..200_000 {
        now += 1;
        store.apply_sync(&format!("flood:{i}"), Now::At(now), Transform::Check { strategy: &gcra, cost: 1 }).unwrap();
    }
    // One key a ms, each live for 1 ms and kept for SWEEP_GRACE_MS more: a shard sweeps when
    // its table fills, so it holds about its share of the last few graces' keys, far from all.
    let held = store.len();
    assert!(held < 200_000 / 4, "{held} of 200000 keys held");
    assert!(held as i64 >= SWEEP_GRACE_MS, "{held}: the last grace's keys are kept");
}

/// The limiter's way into the log path (`check_log_joined`: `prefix:key` probed without being
/// joined, or joined when too long to be inline) decides and stores as the store call on the
/// joined key: no prefix, a short one, and one that makes every key too long to be inline;
/// an over-long key fails alike. And `Limiter::check_sync_at`, which takes that way for a log
/// on the memory store, answers as the generic store call does.
#[test]
fn the_limiters_log_check_is_the_store_call_on_the_joined_key() {
    let strategy = crate::Strategy::sliding_window_log(4, 100).unwrap();
    let swl = strategy.as_sliding_window_log().unwrap();
    for prefix in ["", "rl", "a prefix long enough to make every key heap-stored"] {
        let (direct, generic) = (MemoryStore::new(), MemoryStore::new());
        let limited = Arc::new(MemoryStore::new());
        let limiter = crate::Limiter::builder(strategy.clone()).store(limited.clone()).prefix(prefix).build();
        for step in 0..600i64 {
            let key = ["u1", "user:42", "k", "a much longer key than the others"][(step % 4) as usize];
            // Backward steps too (a clock jump), and costs over the limit.
            let now = step * 7 - if step % 50 == 49 { 300 } else { 0 };
            let cost = 1 + (step % 6) as u64;
            let full = crate::key::join(prefix, key);
            let check = Transform::Check { strategy: &strategy, cost };
            let a = direct.check_log_joined(prefix, key, now, swl, cost).unwrap();
            let b = generic.apply_sync(&full, Now::At(now), check).unwrap();
            let c = limiter.check_sync_at(key, cost, now).unwrap();
            assert_eq!(Reply::Decision(a), b, "{prefix:?} {key:?} at {now}");
            assert_eq!(a, c, "the limiter, {prefix:?} {key:?} at {now}");
            let peek =
                |s: &MemoryStore| s.apply_sync(&full, Now::At(now), Transform::Peek { strategy: &strategy }).unwrap();
            assert_eq!(peek(&direct), peek(&generic), "stored under the joined key");
            assert_eq!(peek(&limited), peek(&generic), "the limiter stored under the joined key");
        }
        assert_eq!(direct.len(), generic.len());
        assert_eq!(limited.len(), generic.len());
    }
    let (store, long) = (MemoryStore::new(), "k".repeat(300));
    let a = store.check_log_joined("rl", &long, 0, swl, 1).unwrap_err();
    let b =
        store.apply_sync(&crate::key::join("rl", &long), Now::At(0), Transform::Check { strategy: &strategy, cost: 1 });
    let b = b.unwrap_err();
    assert_eq!((a.code(), a.message()), (b.code(), b.message()));
    let limiter = crate::Limiter::builder(strategy.clone()).prefix("rl").build();
    let c = limiter.check_sync_at(&long, 1, 0).unwrap_err();
    assert_eq!((c.code(), c.message()), (b.code(), b.message()));
}

/// `Limiter::check_sync_log_inlined` (the Python binding's way in for a log on the memory
/// store) answers as `Limiter::check_sync` on every limiter: a log with no prefix, a short one
/// and one too long to probe unjoined; costs over the limit, 0 and past 2^53 (errors); keys too
/// long for the store; backward clock steps; a GCRA limiter (the way through `check_sync_at`).
/// Both limiters' stores then hold the same states.
#[test]
fn the_inlined_log_check_is_check_sync() {
    use crate::clock::ManualClock;
    let log = crate::Strategy::sliding_window_log(4, 100).unwrap();
    let gcra = crate::Strategy::gcra(4, 100, None).unwrap();
    let long = "k".repeat(300);
    for (strategy, prefix, is_log) in [
        (&log, "", true),
        (&log, "rl", true),
        (&log, "a prefix long enough to make every key heap-stored", true),
        (&gcra, "rl", false),
    ] {
        let clock = Arc::new(ManualClock::new(0));
        let (a_store, b_store) = (Arc::new(MemoryStore::new()), Arc::new(MemoryStore::new()));
        let build = |store: &Arc<MemoryStore>| {
            crate::Limiter::builder(strategy.clone()).store(store.clone()).clock(clock.clone()).prefix(prefix).build()
        };
        let (a, b) = (build(&a_store), build(&b_store));
        assert_eq!(b.is_log_on_memory(), is_log);
        for step in 0..600i64 {
            let key = ["u1", "user:42", "k", "a much longer key than the others", long.as_str()][(step % 5) as usize];
            clock.set(step * 7 - if step % 50 == 49 { 300 } else { 0 });
            let cost = match step % 37 {
                0 => 0,
                1 => 1 << 54,
                n => 1 + (n % 6) as u64,
            };
            let (x, y) = (a.check_sync(key, cost), b.check_sync_log_inlined(key, cost));
            match (&x, &y) {
                (Ok(x), Ok(y)) => assert_eq!(x, y, "{prefix:?} {key:?} step {step}"),
                (Err(x), Err(y)) => assert_eq!((x.code(), x.message()), (y.code(), y.message())),
                _ => panic!("{prefix:?} {key:?} step {step}: {x:?} vs {y:?}"),
            }
            assert_eq!(a.peek_sync(key).ok(), b.peek_sync(key).ok(), "the same state stored");
        }
        assert_eq!(a_store.len(), b_store.len());
    }
}
