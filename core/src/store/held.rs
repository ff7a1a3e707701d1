//! State held by someone else: one key's state as bytes that a store outside this crate keeps
//! (a Cloudflare Durable Object's storage, a Deno KV entry), and the one step that decides on it
//! — state in, decide, state out.
//!
//! Such a store reads the key's bytes, calls [`step`], and writes what [`Stepped::write`] says,
//! atomically with the read (the object's input gate, a KV commit checked on the versionstamp).
//! The step is the memory store's apply on a slot ([`Transform::run`]) with its expiry rule, so
//! the decisions are the memory store's by construction; the host adds no arithmetic: the
//! deadline, the retention it may hand its own expiry and the shard a key lives on come from
//! here too.
//!
//! A limiter prepares a call ([`crate::Limiter::held_prepare`]: the key checks, the clock read
//! once, the prefixed key) and finishes it ([`crate::Limiter::held_finish`]: a failure through
//! the fail policy), as for the REST store.
//!
//! The bytes: a version byte (1), the state's kind (1 TAT, 2 token bucket, 3 period counter,
//! 4 sliding-window ring, 5 sliding-window log: the SQLite store's kinds), then three
//! little-endian 64-bit integers — the deadline (epoch ms), `a` and `b` (a float as its IEEE-754
//! bits, so it reads back bit for bit) — then `(x, y)` pairs of 64-bit integers (ring slots,
//! log runs).

use std::collections::VecDeque;

use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::limiter::Limiter;
use crate::state::{Log, Slot, State};
use crate::store::{Now, Transform};
use crate::strategy::Strategy;

/// How long a host keeps a state past its deadline before its own expiry may drop it (an hour).
///
/// Why keep it at all: an expired state reads as absent, so dropping it changes no decision,
/// unless a caller's clock steps back to before the deadline (the memory store keeps such a
/// state until a later op finds it expired). The SQLite store's sweep keeps the same grace.
pub const GRACE_MS: i64 = 3_600_000;

const VERSION: u8 = 1;
const HEADER: usize = 2 + 3 * 8;

/// What a held call does (the [`Limiter`] method of the same name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A consuming check.
    Check,
    /// Current capacity; the cost is ignored.
    Peek,
    /// The decision a check would get, consuming nothing.
    Forecast,
}

impl Op {
    /// `check`, `peek` or `forecast`; anything else is `config_invalid`.
    pub fn parse(s: &str) -> Result<Op> {
        match s {
            "check" => Ok(Op::Check),
            "peek" => Ok(Op::Peek),
            "forecast" => Ok(Op::Forecast),
            _ => Err(Error::config("op", "must be 'check', 'peek' or 'forecast'")),
        }
    }

    /// The name [`Op::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Check => "check",
            Op::Peek => "peek",
            Op::Forecast => "forecast",
        }
    }

    fn transform(self, strategy: &Strategy, cost: u64) -> Transform<'_> {
        match self {
            Op::Check => Transform::Check { strategy, cost },
            Op::Peek => Transform::Peek { strategy },
            Op::Forecast => Transform::Forecast { strategy, cost },
        }
    }
}

/// What the host writes back after a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// Nothing changed (a deny, a peek, a forecast on a live state, an absent key).
    Keep,
    /// Store `bytes`; the state is live until `deadline` (epoch ms), and the host's own expiry
    /// may drop it after `retain_ms` from the step's `now` (the deadline plus [`GRACE_MS`]).
    Put {
        /// The encoded state.
        bytes: Vec<u8>,
        /// The state's deadline, epoch ms.
        deadline: i64,
        /// How long the host keeps it, from `now`.
        retain_ms: i64,
    },
    /// Delete the key (its state expired: it is gone for good, whatever this step decided).
    Delete,
}

/// One step's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stepped {
    /// The decision, as the memory store would give it.
    pub decision: Decision,
    /// What to write back.
    pub write: Write,
}

/// Decides `op` of `cost` on the state `held` (the bytes a previous step wrote, or `None`) at
/// `now`: the memory store's apply, expiry included. Bytes no step wrote are `store_unavailable`.
pub fn step(strategy: &Strategy, op: Op, cost: u64, now: i64, held: Option<&[u8]>) -> Result<Stepped> {
    crate::validate::now(now)?;
    if op != Op::Peek {
        crate::validate::cost(cost)?;
    }
    let (mut slot, expired) = match held.map(decode).transpose()? {
        Some((_, deadline)) if now > deadline => (None, true),
        Some((state, _)) => (Some(state), false),
        None => (None, false),
    };
    let step = op.transform(strategy, cost).run(&mut slot, now);
    let write = match (step.ttl_ms, slot) {
        (Some(ttl), Some(state)) => {
            let deadline = now.saturating_add(ttl);
            Write::Put { bytes: encode(&state, deadline), deadline, retain_ms: ttl.max(1).saturating_add(GRACE_MS) }
        }
        (Some(_), None) => Write::Delete,
        (None, _) if expired => Write::Delete,
        (None, _) => Write::Keep,
    };
    Ok(Stepped { decision: step.reply.decision()?, write })
}

/// Whether the host may drop `held` at `now`: its deadline passed more than [`GRACE_MS`] ago
/// (bytes no step wrote may be dropped too).
pub fn sweepable(held: &[u8], now: i64) -> bool {
    decode(held).map_or(true, |(_, deadline)| now > deadline.saturating_add(GRACE_MS))
}

/// The name of the shard (a Durable Object's `idFromName`) that holds `full_key`: the key
/// itself with no `shards` (one object per key), else `shard-<i>` with `i` below `shards`
/// (FNV-1a of the key; stable across versions, since it says where existing state lives).
pub fn shard(full_key: &str, shards: Option<u32>) -> String {
    match shards {
        None | Some(0) => full_key.to_owned(),
        Some(n) => {
            let h = full_key
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
            format!("shard-{}", h % u64::from(n))
        }
    }
}

/// `state` and its deadline as bytes (see the module doc).
pub fn encode(state: &State, deadline: i64) -> Vec<u8> {
    let (kind, a, b, pairs): (u8, i64, i64, Vec<(i64, u64)>) = match state {
        State::Tat(tat) => (1, tat.to_bits() as i64, 0, Vec::new()),
        State::Bucket { tokens, last } => (2, tokens.to_bits() as i64, *last, Vec::new()),
        State::Counter { start, count } => (3, *start, *count as i64, Vec::new()),
        State::Ring(slots) => (4, 0, 0, slots.iter().map(|s| (s.tick, s.count)).collect()),
        State::Log(log) => (5, 0, 0, log.iter().copied().collect()),
    };
    let mut out = Vec::with_capacity(HEADER + 16 * pairs.len());
    out.extend_from_slice(&[VERSION, kind]);
    for v in [deadline, a, b] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (x, y) in pairs {
        out.extend_from_slice(&x.to_le_bytes());
        out.extend_from_slice(&y.to_le_bytes());
    }
    out
}

fn word(bytes: &[u8], at: usize) -> i64 {
    bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map_or(0, i64::from_le_bytes)
}

/// The state and deadline `bytes` hold; `store_unavailable` for bytes [`encode`] did not write.
pub fn decode(bytes: &[u8]) -> Result<(State, i64)> {
    let bad = |why: &str| Error::store(format!("a held state {why}"));
    if bytes.len() < HEADER || !(bytes.len() - HEADER).is_multiple_of(16) {
        return Err(bad(&format!("of {} bytes (not a header and whole 16-byte pairs)", bytes.len())));
    }
    if bytes[0] != VERSION {
        return Err(bad(&format!("of format version {} (this build reads {VERSION})", bytes[0])));
    }
    let (deadline, a, b) = (word(bytes, 2), word(bytes, 10), word(bytes, 18));
    let pairs = bytes[HEADER..].chunks_exact(16).map(|c| (word(c, 0), word(c, 8) as u64));
    let state = match bytes[1] {
        1 => State::Tat(f64::from_bits(a as u64)),
        2 => State::Bucket { tokens: f64::from_bits(a as u64), last: b },
        3 => State::Counter { start: a, count: b as u64 },
        4 => State::Ring(pairs.map(|(tick, count)| Slot { tick, count }).collect()),
        5 => {
            let runs: VecDeque<(i64, u64)> = pairs.collect();
            if !runs.iter().zip(runs.iter().skip(1)).all(|(x, y)| x.0 < y.0) {
                return Err(bad("whose sliding-window log runs are not ascending"));
            }
            State::Log(Log::from(runs))
        }
        other => return Err(bad(&format!("of unknown kind {other}"))),
    };
    Ok((state, deadline))
}

/// A limiter's call prepared for a store that holds state elsewhere (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldCall {
    /// The full store key (the limiter's prefix joined).
    pub key: String,
    /// The time the call decides at: the limiter's clock, or `Server` for the store's.
    pub now: Now,
    /// What it does.
    pub op: Op,
    /// Units requested (1 for a peek).
    pub cost: u64,
}

impl Limiter {
    /// Prepares `op` of `cost` on `key`: the cost and the key are checked as on every store, the
    /// clock is read once and the key is prefixed.
    pub fn held_prepare(&self, op: Op, key: &str, cost: u64) -> Result<HeldCall> {
        self.held_call(op, key, cost, self.now())
    }

    /// Prepares `check_many`: one check per key, at one clock reading.
    pub fn held_prepare_many(&self, keys: &[String], cost: u64) -> Result<Vec<HeldCall>> {
        crate::validate::cost(cost).map_err(|e| self.observe_error(e))?;
        let now = self.now();
        keys.iter().map(|k| self.held_call(Op::Check, k, cost, now)).collect()
    }

    fn held_call(&self, op: Op, key: &str, cost: u64, now: Now) -> Result<HeldCall> {
        let cost = if op == Op::Peek { 1 } else { cost };
        self.admit(key, now, &op.transform(self.strategy(), cost)).map_err(|e| self.observe_error(e))?;
        Ok(HeldCall { key: self.full_key(key), now, op, cost })
    }

    /// The full store key `reset` deletes (its length checked as on every store).
    pub fn held_reset_key(&self, key: &str) -> Result<String> {
        self.check_key_length(key)?;
        Ok(self.full_key(key))
    }

    /// The decision of `call` from what the store answered: a `store_unavailable` through the
    /// fail policy, as on every store.
    pub fn held_finish(&self, call: &HeldCall, answer: Result<Decision>) -> Result<Decision> {
        let result = match answer {
            Ok(d) => Ok(d),
            Err(e) => self.fail_policy().fallback(e, self.strategy().limit(), call.now.fallback_ms(&**self.clock())),
        };
        match call.op {
            Op::Check => self.observe(result),
            Op::Peek => self.observe_read(result, false),
            Op::Forecast => self.observe_read(result, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Clock, ManualClock, MemoryStore, Strategy};
    use std::sync::Arc;

    fn strategies() -> Vec<Strategy> {
        vec![
            Strategy::gcra(5, 1000, Some(3)).unwrap(),
            Strategy::token_bucket(4, 2.5).unwrap(),
            Strategy::fixed_window(3, 700).unwrap(),
            Strategy::sliding_window(4, 900, Some(3)).unwrap(),
            Strategy::sliding_window_log(3, 800).unwrap(),
        ]
    }

    /// Random timelines (forward, backward, past expiry) decide exactly as the memory store,
    /// with the state passed through bytes at every step.
    #[test]
    fn steps_on_bytes_decide_as_the_memory_store() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for strategy in strategies() {
            let clock = ManualClock::new(1_000_000);
            let memory = Limiter::builder(strategy.clone())
                .store(Arc::new(MemoryStore::new()))
                .clock(Arc::new(clock.clone()))
                .build();
            let mut held: Option<Vec<u8>> = None;
            for i in 0..3000 {
                let jump = rand(100) as i64 - if rand(10) == 0 { 400 } else { 10 };
                let jump = if rand(50) == 0 { 5000 } else { jump };
                clock.set(clock.now_ms() + jump);
                let now = clock.now_ms();
                let cost = 1 + rand(3);
                let op = [Op::Check, Op::Check, Op::Check, Op::Peek, Op::Forecast][rand(5) as usize];
                let want = match op {
                    Op::Check => memory.check_sync("k", cost),
                    Op::Peek => memory.peek_sync("k"),
                    Op::Forecast => memory.forecast_sync("k", cost),
                }
                .unwrap();
                let got = step(&strategy, op, cost, now, held.as_deref()).unwrap();
                assert_eq!(got.decision, want, "{strategy:?} op {i} {op:?} at {now}");
                match got.write {
                    Write::Put { bytes, deadline, retain_ms } => {
                        assert!(deadline >= now && retain_ms > GRACE_MS);
                        held = Some(bytes);
                    }
                    Write::Delete => held = None,
                    Write::Keep => {}
                }
            }
        }
    }

    #[test]
    fn every_state_reads_back_bit_for_bit() {
        let mut log = Log::new();
        for (s, u) in [(5, 1), (9, 3), (12, u64::MAX)] {
            log.add(s, u);
        }
        let states = [
            State::Tat(1_700_000_000_123.25),
            State::Bucket { tokens: 2.5e-300, last: -7 },
            State::Counter { start: i64::MIN, count: u64::MAX },
            State::Ring(vec![Slot::EMPTY, Slot { tick: 3, count: 9 }].into_boxed_slice()),
            State::Log(log),
        ];
        for s in states {
            assert_eq!(decode(&encode(&s, 42)).unwrap(), (s, 42));
        }
        let nan = decode(&encode(&State::Tat(f64::NAN), 1)).unwrap().0;
        assert!(matches!(nan, State::Tat(t) if t.to_bits() == f64::NAN.to_bits()));
    }

    #[test]
    fn bytes_no_step_wrote_are_store_unavailable() {
        let s = Strategy::gcra(5, 1000, None).unwrap();
        let mut wrong_version = encode(&State::Tat(1.0), 5);
        wrong_version[0] = 9;
        let mut unsorted = encode(&State::Log(Log::new()), 5);
        for (x, y) in [(7i64, 1u64), (3, 1)] {
            unsorted.extend_from_slice(&x.to_le_bytes());
            unsorted.extend_from_slice(&y.to_le_bytes());
        }
        for bytes in [vec![], vec![1; 25], vec![1; 27], wrong_version, unsorted, {
            let mut b = encode(&State::Tat(1.0), 5);
            b[1] = 8;
            b
        }] {
            let e = step(&s, Op::Check, 1, 0, Some(&bytes)).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::StoreUnavailable, "{bytes:?}");
            assert!(sweepable(&bytes, 0));
        }
    }

    #[test]
    fn an_expired_state_is_deleted_even_when_the_step_writes_nothing() {
        let s = Strategy::fixed_window(1, 1000).unwrap();
        let put = step(&s, Op::Check, 1, 500, None).unwrap();
        let Write::Put { bytes, deadline, .. } = put.write else { panic!("{put:?}") };
        assert_eq!(deadline, 1000);
        assert_eq!(step(&s, Op::Check, 1, 999, Some(&bytes)).unwrap().write, Write::Keep, "a deny writes nothing");
        assert!(
            step(&s, Op::Check, 1, 1000, Some(&bytes)).unwrap().decision.allowed,
            "the next window starts at the deadline"
        );
        assert_eq!(step(&s, Op::Peek, 1, 1001, Some(&bytes)).unwrap().write, Write::Delete);
        assert!(!sweepable(&bytes, 1000 + GRACE_MS));
        assert!(sweepable(&bytes, 1001 + GRACE_MS));
    }

    #[test]
    fn shards_are_stable_and_within_range() {
        assert_eq!(shard("api:user:1", None), "api:user:1");
        assert_eq!(shard("api:user:1", Some(1)), "shard-0");
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c: pinned, since it says where state lives.
        assert_eq!(shard("a", Some(1000)), format!("shard-{}", 0xaf63_dc4c_8601_ec8cu64 % 1000));
        for i in 0..200 {
            let s = shard(&format!("k{i}"), Some(7));
            assert!(s.strip_prefix("shard-").unwrap().parse::<u32>().unwrap() < 7);
        }
    }

    #[test]
    fn a_limiter_prepares_on_the_prefixed_key_and_fails_by_its_policy() {
        let clock = ManualClock::new(77);
        let l = Limiter::builder(Strategy::gcra(5, 1000, None).unwrap())
            .prefix("api")
            .clock(Arc::new(clock))
            .fail_policy(crate::FailPolicy::FailClosed)
            .build();
        let call = l.held_prepare(Op::Check, "u", 2).unwrap();
        assert_eq!(call, HeldCall { key: "api:u".into(), now: Now::At(77), op: Op::Check, cost: 2 });
        assert_eq!(l.held_prepare(Op::Check, "u", 0).unwrap_err().code(), crate::ErrorCode::ConfigInvalid);
        let d = l.held_finish(&call, Err(Error::store("gone"))).unwrap();
        assert!(!d.allowed && d.fallback);
        let e = l.held_finish(&call, Err(Error::config("x", "bad"))).unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::ConfigInvalid);
    }
}
