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

use std::collections::HashMap;

use redis::Value;
use redis::aio::ConnectionLike;

use crate::error::{Error, Result};
use crate::redis::call::{self, Outcome, ScriptCall};

/// How often a call is re-run after Redis dropped a freshly written key.
const MAX_ATTEMPTS: usize = 8;

/// Deadlines on the caller's clock, per key the store persisted.
#[derive(Debug, Default)]
pub struct Book {
    deadlines: HashMap<String, i64>,
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

/// Runs `call` at `now` with expiry on the caller's clock.
pub async fn run(book: &mut Book, conn: &mut impl ConnectionLike, call: &ScriptCall, now: i64) -> Result<Outcome> {
    let keys = &call.keys;
    let mut expired: Vec<&String> = keys.iter().filter(|k| book.expired(k, now)).collect();
    let mut snapshot: Vec<Value> = Vec::new();
    for _ in 0..MAX_ATTEMPTS {
        let mut p = redis::pipe();
        for k in &expired {
            p.cmd("DEL").arg(*k);
        }
        for k in keys {
            p.cmd("DUMP").arg(k);
        }
        p.cmd("MULTI");
        let mut eval = redis::cmd("EVAL");
        eval.arg(&call.script.source).arg(keys.len()).arg(keys);
        call::append_args(&mut eval, &call.args);
        p.add_command(eval);
        for k in keys {
            p.cmd("PEXPIRETIME").arg(k);
            p.cmd("PERSIST").arg(k);
        }
        p.cmd("EXEC");
        let replies = conn.req_packed_commands(&p, 0, p.len()).await.map_err(Error::store)?;
        // The `DEL`s' replies come first, then the `DUMP`s': a snapshot taken from the wrong
        // replies once deleted a live key on a re-run (its "dump" was a `DEL`'s count).
        let dumps = &replies[expired.len()..expired.len() + keys.len()];
        for k in expired.drain(..) {
            book.forget(k);
        }
        let Some(Value::Array(exec)) = replies.last() else {
            return Err(Error::store(format!("replay: the transaction was aborted: {:?}", replies.last())));
        };
        if let Some(Value::ServerError(e)) = exec.first() {
            return Err(Error::store(format!("{} failed: {e:?}", call.script.name)));
        }
        let decoded = call::decode(call, exec.first().unwrap_or(&Value::Nil))?;
        let mut vanished = false;
        for (i, k) in keys.iter().enumerate() {
            let expire_time = int(&exec[1 + 2 * i])?;
            match decoded.ttls[i] {
                Some(_) if expire_time == -2 => vanished = true,
                // A period counter adding to its own period's count leaves the key's TTL alone
                // (core/lua/period_counter.lua, "TTL"): the key already expires at the period's
                // end, the deadline the book holds for it since the period's first write.
                Some(ttl) if expire_time == -1 && book.deadlines.get(k) == Some(&now.saturating_add(ttl)) => {}
                Some(_) if expire_time == -1 => {
                    return Err(Error::store(format!("{} wrote {k} without a TTL", call.script.name)));
                }
                Some(ttl) => {
                    book.deadlines.insert(k.clone(), now.saturating_add(ttl));
                }
                None if expire_time == -2 => book.forget(k),
                None => {}
            }
        }
        if !vanished {
            return Ok(decoded.reply);
        }
        // Put the keys back as they were before the call, then run it again.
        snapshot.clear();
        snapshot.extend(dumps.iter().cloned());
        let mut restore = redis::pipe();
        for (k, dump) in keys.iter().zip(&snapshot) {
            restore.cmd("DEL").arg(k);
            if let Value::BulkString(bytes) = dump {
                restore.cmd("RESTORE").arg(k).arg(0).arg(bytes.as_slice()).arg("REPLACE");
            }
        }
        restore.query_async::<()>(conn).await.map_err(Error::store)?;
    }
    Err(Error::store(format!(
        "replay: Redis kept expiring a fresh key of {} (clock ticking too fast?)",
        call.script.name
    )))
}
