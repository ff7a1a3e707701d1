//! Deterministic replay: expiry on the caller's clock, on a real Redis.
//!
//! Redis expires keys on its own wall clock, while a conformance vector (or a generated
//! timeline) runs on an explicit clock that may jump by days, or backwards. In this mode every
//! script call runs as
//!
//! ```text
//! DEL <keys the book says expired>   DUMP <keys>
//! MULTI  EVAL <script>  (PEXPIRETIME k  PERSIST k) per key  EXEC
//! ```
//!
//! in one pipelined round trip. The script sets its TTLs exactly as in production (and reports
//! them); `PEXPIRETIME` proves a TTL was really set, `PERSIST` takes the key out of Redis's hands,
//! and the book remembers the deadline on the caller's clock (`now + ttl`). Before the first op
//! whose `now` is past a deadline (`now > deadline`, Redis's rule) the store deletes the key
//! itself. Redis 7.0 can still drop a key written with a 1 ms TTL between the script and
//! `PERSIST` when its wall-clock millisecond ticks; that shows as a written key that is gone, and
//! the call is re-run from the `DUMP` snapshot. Calls are serialised (one client replays).
//!
//! The rules live in [`Replay`], with no I/O (as the engine's): it hands out each round trip's
//! commands and reads their replies. The RESP store drives it over its shared connection ([`run`]); the REST
//! store, natively and in the WebAssembly build, over `/pipeline` (`super::rest::Batch`).

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::redis::call::{self, Outcome, ScriptCall};
use crate::redis::engine::value::{Args, Value};

/// How often a call is re-run after Redis dropped a freshly written key.
const MAX_ATTEMPTS: usize = 8;

/// Deadlines on the caller's clock, per key the store persisted.
#[derive(Debug, Default)]
pub struct Book {
    /// Hashed with foldhash's fixed-seed hasher (the memory store's): std's SipHash would be in
    /// the WebAssembly module for this map alone.
    deadlines: HashMap<String, i64, foldhash::fast::FixedState>,
}

impl Book {
    fn expired(&self, key: &str, now: i64) -> bool {
        self.deadlines.get(key).is_some_and(|&d| now > d)
    }

    /// Every key with a deadline, forgetting them all.
    pub fn take_keys(&mut self) -> Vec<String> {
        self.deadlines.drain().map(|(k, _)| k).collect()
    }

    /// Forgets `key` (it was deleted).
    pub fn forget(&mut self, key: &str) {
        self.deadlines.remove(key);
    }
}

fn int(v: &Value) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(Error::store(format!("replay: expected an integer, got {other:?}"))),
    }
}

/// One command of a round trip: its arguments, the command's name first.
pub type Command = Args;

/// `name` and `key`, or `name` alone.
fn command(name: &str, key: Option<&str>) -> Command {
    let mut c = Args::new();
    c.arg(name);
    if let Some(k) = key {
        c.arg(k);
    }
    c
}

/// What the last round trip was.
#[derive(Debug)]
enum Phase {
    /// The call, after deleting `expired` (keys whose deadline passed).
    Call { expired: Vec<String> },
    /// Putting the keys back as they were before the call (`snapshot`: their `DUMP`s).
    Restore { snapshot: Vec<Value> },
}

/// One script call in replay mode: [`Replay::commands`] is the next round trip (send them
/// pipelined, in order), [`Replay::feed`] its replies, until it gives the outcome.
#[derive(Debug)]
pub struct Replay {
    call: ScriptCall,
    now: i64,
    phase: Phase,
    attempts: usize,
}

impl Replay {
    /// `call` at `now`, with `book`'s deadlines.
    pub fn new(book: &Book, call: ScriptCall, now: i64) -> Replay {
        let expired = call.keys.iter().filter(|k| book.expired(k, now)).cloned().collect();
        Replay { call, now, phase: Phase::Call { expired }, attempts: 1 }
    }

    /// The commands of the next round trip.
    pub fn commands(&self) -> Vec<Command> {
        let keys = &self.call.keys;
        let mut out = Vec::new();
        match &self.phase {
            Phase::Call { expired } => {
                out.extend(expired.iter().map(|k| command("DEL", Some(k))));
                out.extend(keys.iter().map(|k| command("DUMP", Some(k))));
                out.push(command("MULTI", None));
                let mut eval = command("EVAL", None);
                eval.arg(&self.call.script.source).arg(keys.len());
                for k in keys {
                    eval.arg(k);
                }
                for a in self.call.args.iter() {
                    eval.arg(a);
                }
                out.push(eval);
                for k in keys {
                    out.push(command("PEXPIRETIME", Some(k)));
                    out.push(command("PERSIST", Some(k)));
                }
                out.push(command("EXEC", None));
            }
            Phase::Restore { snapshot } => {
                for (k, dump) in keys.iter().zip(snapshot) {
                    out.push(command("DEL", Some(k)));
                    if let Value::BulkString(bytes) = dump {
                        let mut c = command("RESTORE", Some(k));
                        c.arg("0").arg(bytes).arg("REPLACE");
                        out.push(c);
                    }
                }
            }
        }
        out
    }

    /// Feeds the replies to [`Replay::commands`], in order: `Some` outcome, or `None` to send
    /// [`Replay::commands`] again.
    pub fn feed(&mut self, book: &mut Book, replies: &[Value]) -> Option<Result<Outcome>> {
        let keys = &self.call.keys;
        let expired = match &mut self.phase {
            Phase::Restore { .. } => {
                if let Some(e) = replies.iter().find(|r| matches!(r, Value::Error(_))) {
                    return Some(Err(Error::store(format!("replay: restoring the keys failed: {e:?}"))));
                }
                self.phase = Phase::Call { expired: Vec::new() };
                return None;
            }
            Phase::Call { expired } => std::mem::take(expired),
        };
        // The `DEL`s' replies come first, then the `DUMP`s': a snapshot taken from the wrong
        // replies once deleted a live key on a re-run (its "dump" was a `DEL`'s count).
        let Some(dumps) = replies.get(expired.len()..expired.len() + keys.len()) else {
            return Some(Err(Error::store(format!("replay: {} replies to the pipeline", replies.len()))));
        };
        for k in &expired {
            book.forget(k);
        }
        let Some(Value::Array(exec)) = replies.last() else {
            // `{:?}` of the `Option`, spelled out: its `Debug` would be in the WebAssembly module
            // for this message alone.
            let last = match replies.last() {
                Some(v) => format!("Some({v:?})"),
                None => "None".to_string(),
            };
            return Some(Err(Error::store(format!("replay: the transaction was aborted: {last}"))));
        };
        if let Some(Value::Error(e)) = exec.first() {
            return Some(Err(Error::store(format!("{} failed: {e:?}", self.call.script.name))));
        }
        let settled = (|| {
            let decoded = call::decode(&self.call, exec.first().unwrap_or(&Value::Nil))?;
            let mut vanished = false;
            for (i, k) in keys.iter().enumerate() {
                let expire_time = int(exec.get(1 + 2 * i).unwrap_or(&Value::Nil))?;
                let now = self.now;
                match decoded.ttls[i] {
                    Some(_) if expire_time == -2 => vanished = true,
                    // A period counter adding to its own period's count leaves the key's TTL
                    // alone (core/lua/period_counter.lua, "TTL"): the key already expires at the
                    // period's end, the deadline the book holds for it since the period's first
                    // write.
                    Some(ttl) if expire_time == -1 && book.deadlines.get(k) == Some(&now.saturating_add(ttl)) => {}
                    Some(_) if expire_time == -1 => {
                        return Err(Error::store(format!("{} wrote {k} without a TTL", self.call.script.name)));
                    }
                    Some(ttl) => {
                        book.deadlines.insert(k.clone(), now.saturating_add(ttl));
                    }
                    None if expire_time == -2 => book.forget(k),
                    None => {}
                }
            }
            Ok((!vanished).then_some(decoded.reply))
        })();
        match settled {
            Ok(Some(reply)) => Some(Ok(reply)),
            Err(e) => Some(Err(e)),
            Ok(None) if self.attempts >= MAX_ATTEMPTS => Some(Err(Error::store(format!(
                "replay: Redis kept expiring a fresh key of {} (clock ticking too fast?)",
                self.call.script.name
            )))),
            // Put the keys back as they were before the call, then run it again.
            Ok(None) => {
                self.attempts += 1;
                self.phase = Phase::Restore { snapshot: dumps.to_vec() };
                None
            }
        }
    }
}

/// Runs `call` at `now` with expiry on the caller's clock, each round trip on the store's
/// shared connection: one node's, or on a cluster the master of the call's slot (every key of
/// a call lies in one slot), which sends a round again after a `MOVED` only when the node
/// refused all of it (`Router::round`).
#[cfg(feature = "redis")]
pub(crate) async fn run(
    book: &mut Book,
    router: &std::sync::Arc<crate::redis::cluster::Router>,
    call: &ScriptCall,
    now: i64,
) -> Result<Outcome> {
    let key = call.keys.first().map_or(&b""[..], |k| k.as_bytes());
    let mut replay = Replay::new(book, call.clone(), now);
    loop {
        let replies = router.round(key, &replay.commands()).await?;
        if let Some(outcome) = replay.feed(book, &replies) {
            return outcome;
        }
    }
}
