//! A limiter's calls for a binding's own Postgres socket ([`super::session`]): prepared here
//! (entry checks, the clock read, the prefixed key, the statement's parameters) and finished
//! here (the fail policy, metrics), so the socket only moves bytes, as with Redis
//! (`crate::redis::transport`).

use super::call::{self, Op, StepCall};
use crate::decision::Decision;
use crate::error::Result;
use crate::limiter::Limiter;
use crate::store::{Now, Reply, Transform};

/// A call ready for [`super::session::Session::call`]: the full key and the statement's
/// parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SqlCall {
    /// The prefixed key.
    pub key: String,
    /// The statement's parameters (its op and time are what [`Limiter::finish_sql`] reads).
    pub call: StepCall,
}

impl Limiter {
    /// Prepares a check, peek or forecast (`op`; a peek ignores `cost`) of `key` now, as the
    /// async method of that name would send it. A call refused before it reaches the store (a
    /// bad cost or key, a strategy Postgres cannot run on this clock) is the call's outcome,
    /// through the fail policy and counted, as on the store's own path. The system clock is
    /// read directly, not through its ticker thread: a call that waits for a round trip does
    /// not need the ~30 ns saved, and on a small machine the thread's 1,000 wake-ups a second
    /// compete with the two processes the round trip waits for.
    pub fn prepare_sql(&self, op: Op, key: &str, cost: u64) -> Result<SqlCall> {
        self.prepare_sql_at(op, key, cost, self.now_unticked())
    }

    /// [`Limiter::prepare_sql`] of one check per key, all at one clock read (as
    /// [`Limiter::check_many`]); a bad cost is one error.
    pub fn prepare_sql_many(&self, keys: &[&str], cost: u64) -> Result<Vec<SqlCall>> {
        crate::validate::cost(cost).map_err(|e| self.observe_error(e))?;
        let now = self.now_unticked();
        keys.iter().map(|k| self.prepare_sql_at(Op::Check, k, cost, now)).collect()
    }

    fn prepare_sql_at(&self, op: Op, key: &str, cost: u64, now: Now) -> Result<SqlCall> {
        let strategy = self.strategy();
        let transform = match op {
            Op::Peek => Transform::Peek { strategy },
            Op::Forecast => Transform::Forecast { strategy, cost },
            _ => Transform::Check { strategy, cost },
        };
        if let Err(e) = self.admit(key, now, &transform) {
            return Err(self.observe_error(e));
        }
        match call::prepare(&transform, now) {
            Ok(call) => Ok(SqlCall { key: self.full_key(key), call }),
            Err(e) => Err(self.observe_error(e)),
        }
    }

    /// The decision of a call [`Limiter::prepare_sql`] made, from the session's reply (or the
    /// driver's error: a timeout, a lost connection): a `store_unavailable` goes through the
    /// fail policy, and the outcome is counted in the limiter's metrics as the call's op, once.
    pub fn finish_sql(&self, c: &StepCall, reply: Result<Reply>) -> Result<Decision> {
        let now = match c.now {
            Some(t) => Now::At(t),
            None => Now::Server,
        };
        let result = match reply.and_then(|r| r.decision()) {
            Ok(d) => Ok(d),
            Err(e) => self.fail_policy().fallback(e, self.strategy().limit(), now.fallback_ms(&**self.clock())),
        };
        match c.op {
            Op::Peek => self.observe_read(result, false),
            Op::Forecast => self.observe_read(result, true),
            _ => self.observe(result),
        }
    }
}
