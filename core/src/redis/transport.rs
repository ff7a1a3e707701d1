//! Calls for a binding that brings its own transport.
//!
//! Why: a binding whose runtime is an event loop (Node) pays two thread hops per call when the
//! Rust store does the I/O (the request crosses to a Tokio thread, the reply crosses back),
//! which costs more than the Redis round trip itself. Such a binding can instead write the
//! bytes on its own socket and hand the reply back here. Everything that decides stays in the
//! core: the script, its keys and arguments, the clock read, the key prefix, the reply's
//! decoding and the fail policy. The transport only moves bytes and owns the wire rules that
//! [`super::RedisStore`] follows too:
//!
//! 1. Write [`PreparedCall::evalsha`]. Pipelining is fine; replies come back in order.
//! 2. If the reply [`is_noscript`], write [`PreparedCall::eval`] once (it also caches the
//!    script again). No other reply is ever answered by a resend.
//! 3. Hand the one reply frame (complete RESP bytes) to [`crate::Limiter::finish`] (or, keeping
//!    only the call's [`PreparedCall::ticket`], [`crate::Limiter::finish_ticket`]). If no reply
//!    came within the store's `timeout_ms`, or the connection failed, hand it an error made
//!    with [`transport_error`] (or [`timed_out`]) instead: the limiter's fail policy decides,
//!    exactly as on the store's own path. A timed-out call must never be sent again (it may
//!    already have counted), and its late reply must be read and dropped.
//!
//! A store that runs functions (`scripting: auto` on Redis >= 7) is spoken to with `FCALL`
//! ([`PreparedCall::write_first`], [`PreparedCall::retry`], [`is_missing`], [`preload_for`]), as
//! its own paths do, so a restarted server costs no `NOSCRIPT` round. It does not route by
//! slot by itself: on a cluster, [`super::routed`] says which master each call goes to and what a
//! redirect asks for; under Sentinel a binding uses the store's own calls
//! ([`super::RedisStore::is_routed`], [`super::RedisStore::routes`]).
//!
//! Nothing here does I/O or reads a clock other than the limiter's own (once, in
//! [`crate::Limiter::prepare`]).

use redis::ConnectionAddr;

use super::call::{self, Outcome, ScriptCall};
use super::{eval_cmd, single};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::limiter::Limiter;
use crate::store::{Now, Transform};
use crate::validate;

/// What a prepared single-key call does (the async methods of [`Limiter`] of the same name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// [`Limiter::check`]: consumes when allowed.
    Check,
    /// [`Limiter::peek`]: current capacity; the cost is ignored.
    Peek,
    /// [`Limiter::forecast`]: the decision a check would get, consuming nothing.
    Forecast,
}

/// One script call, ready for the wire: its bytes come from [`PreparedCall::evalsha`] (and
/// [`PreparedCall::eval`] after `NOSCRIPT`), its reply goes to [`Limiter::finish`].
#[derive(Clone, Debug)]
pub struct PreparedCall {
    call: ScriptCall,
    op: Op,
    now: Now,
}

/// What a transport keeps per single-key call in flight, instead of the [`PreparedCall`], to
/// finish it with [`Limiter::finish_ticket`]: the time it was prepared at and, for a
/// fixed-window check on the caller's clock, the cost it was sent with.
///
/// Why a cost: such a check goes in the script's `count` mode, whose reply is the window's
/// count alone (~35k instructions inside Redis against ~43k for the six-integer reply,
/// bench/redis_instructions.py), and the decision is derived from that count, the cost and the
/// window (the limiter's strategy) by the Rust fixed window. The time alone cannot decode it.
/// It is `Copy` and two numbers wide, so a transport that keeps per-call state in another
/// language (Node keeps two `f64`s, [`Ticket::counted`] 0 for none) carries it as cheaply as
/// the time it carried before. The core makes it; a transport only hands it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    op: Op,
    now: Now,
    counted: Option<u64>,
}

impl Ticket {
    /// A ticket from what [`Ticket::now`] and [`Ticket::counted`] gave (a transport that keeps
    /// them as plain numbers). A ticket that is not its call's can only make the reply
    /// unreadable (`store_unavailable`), or, with another cost, mis-decode a count reply, or,
    /// with another op, count the decision as another kind of call in the limiter's metrics:
    /// hand back exactly what was given.
    pub fn new(op: Op, now: Now, counted: Option<u64>) -> Ticket {
        Ticket { op, now, counted }
    }

    /// What the call does: its decision is counted as that (a check, a peek or a forecast).
    pub fn op(&self) -> Op {
        self.op
    }

    /// The time the call was prepared at.
    pub fn now(&self) -> Now {
        self.now
    }

    /// The cost of a check sent in `count` mode (its reply is the window's count), else `None`
    /// (the reply is a six-integer decision).
    pub fn counted(&self) -> Option<u64> {
        self.counted
    }
}

impl PreparedCall {
    /// `EVALSHA sha numkeys keys... args...`, RESP-encoded: the first (and usually only) send.
    pub fn evalsha(&self) -> Vec<u8> {
        eval_cmd("EVALSHA", &self.call.script.sha, &self.call).get_packed_command()
    }

    /// `EVAL source numkeys keys... args...`, RESP-encoded: sent only after a `NOSCRIPT` reply.
    pub fn eval(&self) -> Vec<u8> {
        eval_cmd("EVAL", &self.call.script.source, &self.call).get_packed_command()
    }

    /// The time the call was prepared at (`Now::Server`: the script reads Redis's `TIME`).
    pub fn now(&self) -> Now {
        self.now
    }

    /// What the call does (a multi limiter's or a shaper's call says `Check`).
    pub fn op(&self) -> Op {
        self.op
    }

    /// What [`Limiter::finish_ticket`] needs of a single-key call (check, peek or forecast) to
    /// finish it without the call itself.
    pub fn ticket(&self) -> Ticket {
        Ticket { op: self.op, now: self.now, counted: call::counted_cost(&self.call) }
    }

    /// A single-key call of any transform ([`crate::Shaper::prepare`]).
    pub(crate) fn single(full_key: &str, now: Now, transform: Transform<'_>) -> PreparedCall {
        PreparedCall { call: call::single(full_key, now, &transform), op: Op::Check, now }
    }

    /// A single-key call's reply, decoded (`store_unavailable` for a transport error, a server
    /// error or a malformed reply).
    pub(crate) fn single_reply(&self, reply: Result<&[u8]>) -> Result<crate::store::Reply> {
        outcome(&self.call, reply).and_then(single)
    }

    /// The fused call of a multi-dimensional check ([`crate::MultiLimiter::prepare`]).
    pub(crate) fn multi(rule: crate::store::Rule, dims: &[crate::store::DimensionCall<'_>], now: Now) -> PreparedCall {
        PreparedCall { call: call::multi(rule, dims, now), op: Op::Check, now }
    }

    /// A multi call's reply, decoded (`store_unavailable` for a transport error, a server
    /// error or a malformed reply).
    pub(crate) fn multi_reply(&self, reply: Result<&[u8]>) -> Result<crate::store::MultiReply> {
        outcome(&self.call, reply).and_then(super::multi)
    }

    /// `EVALSHA` appended to `out` (a transport's reusable buffer).
    pub fn write_evalsha(&self, out: &mut Vec<u8>) {
        eval_cmd("EVALSHA", &self.call.script.sha, &self.call).write_packed_command(out);
    }

    /// The first send as the store itself makes it ([`super::RedisStore::uses_functions`]):
    /// `FCALL` when `functions`, else `EVALSHA`, appended to `out`.
    pub fn write_first(&self, functions: bool, out: &mut Vec<u8>) {
        super::invoke::first(invoke_of(functions), &self.call).write_packed_command(out);
    }

    /// [`PreparedCall::write_first`] into a new buffer.
    pub fn first(&self, functions: bool) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_first(functions, &mut out);
        out
    }

    /// The slot of the call's (first) key, for [`super::routed::Routes::node`].
    pub fn slot(&self) -> u16 {
        super::routed::slot(self.call.keys.first().map_or("", String::as_str))
    }

    /// An attempt after the first on a cluster ([`super::routed`]): `ASKING` first when
    /// `hop.asking()`, then the call's first send, or its fallback when `hop.fallback()`,
    /// appended to `out`; [`super::routed::hop_replies`] replies, the call's last.
    pub fn write_hop(&self, functions: bool, hop: super::routed::Hop, out: &mut Vec<u8>) {
        if hop.asking() {
            redis::cmd("ASKING").write_packed_command(out);
        }
        if hop.fallback() {
            out.extend_from_slice(&self.retry(functions));
        } else {
            self.write_first(functions, out);
        }
    }

    /// What to send once after a reply that [`is_missing`]: `EVAL` (one reply), or, when
    /// `functions`, `FUNCTION LOAD REPLACE` and `FCALL` pipelined (two replies, the call's last;
    /// [`retry_replies`] says how many).
    pub fn retry(&self, functions: bool) -> Vec<u8> {
        super::invoke::fallback(invoke_of(functions), &self.call).get_packed_pipeline()
    }
}

fn invoke_of(functions: bool) -> super::invoke::Invoke {
    if functions { super::invoke::Invoke::Functions } else { super::invoke::Invoke::Scripts }
}

/// How many replies [`PreparedCall::retry`] gets back (the call's is the last).
pub fn retry_replies(functions: bool) -> usize {
    if functions { 2 } else { 1 }
}

/// Whether a reply frame says the server lacks the call's script (`NOSCRIPT`) or function
/// (`ERR Function not found`: flushed, or a restarted server): send [`PreparedCall::retry`],
/// once. No other reply is ever answered by a resend.
pub fn is_missing(reply: &[u8]) -> bool {
    is_noscript(reply) || reply.starts_with(b"-ERR Function not found")
}

/// [`preload`] for a store that runs functions: `FUNCTION LOAD REPLACE` of the library (one
/// reply), so a restarted server has it before the first pipelined `FCALL`; else [`preload`].
pub fn preload_for(functions: bool) -> Vec<Vec<u8>> {
    if functions { vec![super::invoke::load_library().get_packed_command()] } else { preload() }
}

/// The reply decoded as [`super::RedisStore`]'s direct path decodes it: a server error is
/// `store_unavailable` naming the script, anything malformed too.
pub(super) fn outcome(call: &ScriptCall, reply: Result<&[u8]>) -> Result<Outcome> {
    let reply = reply?;
    if call.shape == call::Shape::Decision
        && let Some(d) = int_array::<6>(reply).as_ref().and_then(|f| call::decision(f))
    {
        return Ok(Outcome::Single(crate::store::Reply::Decision(d)));
    }
    // A fixed window's count reply, `:digits\r\n`, read the same way.
    if let call::Shape::WindowCount(w) = call.shape
        && let Some(o) = reply.strip_prefix(b":").and_then(line_int).filter(|(_, rest)| rest.is_empty())
        && let Some(o) = w.decode(o.0)
    {
        return Ok(o);
    }
    parsed(call, reply)
}

/// [`outcome`] through redis-rs's parser: every reply that is not a plain decision.
fn parsed(call: &ScriptCall, reply: &[u8]) -> Result<Outcome> {
    let value = redis::parse_redis_value(reply)
        .map_err(|e| Error::store(format!("unreadable reply from {}: {e}", call.script.name)))?;
    match value {
        redis::Value::ServerError(e) => Err(Error::store(format!("{} failed: {e}", call.script.name))),
        v => call::decode_reply(call, &v),
    }
}

/// The integers of `frame` when it is exactly `*N\r\n` and `N` integer replies `:[-]digits\r\n`
/// (at most 18 digits), the form every decision reply takes; `None` for anything else, which
/// [`outcome`] then reads with redis-rs's parser as before. For the frames it accepts, that
/// parser reads the same integers (an `i64` parse of the same digits), and a reply whose
/// integers are not a sane decision falls through to it too, so every outcome and error is
/// unchanged (test: `the_integer_reader_agrees_with_the_parser`).
///
/// Why: redis-rs's `combine` parser was about 40 % of the Node addon's time per Redis call
/// (`perf`, docs/bench-bindings.md), for six small integers.
fn int_array<const N: usize>(frame: &[u8]) -> Option<[i64; N]> {
    let rest = frame.strip_prefix(b"*")?;
    let (n, mut rest) = line_int(rest)?;
    if n != N as i64 {
        return None;
    }
    let mut out = [0; N];
    for o in &mut out {
        let (v, r) = line_int(rest.strip_prefix(b":")?)?;
        *o = v;
        rest = r;
    }
    rest.is_empty().then_some(out)
}

/// `[-]digits\r\n` at the start of `b` (1 to 18 digits): the number and what follows.
fn line_int(b: &[u8]) -> Option<(i64, &[u8])> {
    let (neg, b) = match b.strip_prefix(b"-") {
        Some(r) => (true, r),
        None => (false, b),
    };
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 18 {
        return None;
    }
    let rest = b[digits..].strip_prefix(b"\r\n")?;
    let v = b[..digits].iter().fold(0i64, |v, c| v * 10 + i64::from(c - b'0'));
    Some((if neg { -v } else { v }, rest))
}

/// Whether a reply frame is Redis's `NOSCRIPT` error: its script cache lost the script
/// (restart, `SCRIPT FLUSH`), and the call should be sent once more with [`PreparedCall::eval`].
pub fn is_noscript(reply: &[u8]) -> bool {
    reply.starts_with(b"-NOSCRIPT")
}

/// The `store_unavailable` error for a transport failure (connection refused or lost, ...).
pub fn transport_error(message: &str) -> Error {
    Error::store(message)
}

/// The `store_unavailable` error for a call that got no reply within `timeout_ms`: the same
/// words as the store's own timeout.
pub fn timed_out(timeout_ms: u64) -> Error {
    Error::store(format!("timed out: Redis did not answer within {timeout_ms} ms"))
}

/// `DEL key`, RESP-encoded: [`Limiter::reset`] on the wire (its reply is `:n`, or an error).
pub fn del(full_key: &str) -> Vec<u8> {
    redis::cmd("DEL").arg(full_key).get_packed_command()
}

/// The outcome of a `DEL` sent for a reset: any integer reply is success.
pub fn finish_del(reply: Result<&[u8]>) -> Result<()> {
    match redis::parse_redis_value(reply?) {
        Ok(redis::Value::Int(_)) => Ok(()),
        Ok(redis::Value::ServerError(e)) => Err(Error::store(e.to_string())),
        Ok(v) => Err(Error::store(format!("unexpected reply to DEL: {v:?}"))),
        Err(e) => Err(Error::store(format!("unreadable reply to DEL: {e}"))),
    }
}

/// `SCRIPT LOAD` of every script, RESP-encoded, for a new connection to send after its
/// handshake: calls pipelined on a fresh connection (a restarted server's too) then never meet
/// `NOSCRIPT`, whose `EVAL` resend would run them after calls made later. (Only a
/// `SCRIPT FLUSH` while connected can still reorder a pipeline that way.) A failed load is
/// harmless: the call meets `NOSCRIPT` and is sent as `EVAL`.
pub fn preload() -> Vec<Vec<u8>> {
    super::scripts::SCRIPTS
        .all()
        .iter()
        .map(|s| redis::cmd("SCRIPT").arg("LOAD").arg(&s.source).get_packed_command())
        .collect()
}

/// Where a store connects and how it logs in ([`super::RedisStore::endpoint`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or address (TCP and TLS); empty for a Unix socket.
    pub host: String,
    /// Port (TCP and TLS); 0 for a Unix socket.
    pub port: u16,
    /// Unix socket path (`redis+unix://`), else `None`.
    pub path: Option<String>,
    /// Whether to speak TLS (`rediss://`).
    pub tls: bool,
    /// Database to `SELECT` (0: none needed).
    pub db: i64,
    /// `AUTH` user name, if any.
    pub username: Option<String>,
    /// `AUTH` password, if any.
    pub password: Option<String>,
}

impl Endpoint {
    pub(super) fn of(info: &redis::ConnectionInfo) -> Endpoint {
        let r = info.redis_settings();
        let (host, port, path, tls) = match info.addr() {
            ConnectionAddr::Tcp(h, p) => (h.clone(), *p, None, false),
            ConnectionAddr::TcpTls { host, port, .. } => (host.clone(), *port, None, true),
            ConnectionAddr::Unix(p) => (String::new(), 0, Some(p.to_string_lossy().into_owned()), false),
            // A future address kind: say so through a path nobody can connect to.
            _ => (String::new(), 0, Some(String::new()), false),
        };
        Endpoint {
            host,
            port,
            path,
            tls,
            db: r.db(),
            username: r.username().map(str::to_string),
            password: r.password().map(str::to_string),
        }
    }

    /// The commands to send first on a new connection (`AUTH`, `SELECT`), RESP-encoded, in
    /// order; each must be answered `+OK`.
    pub fn handshake(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        match (&self.username, &self.password) {
            (Some(u), Some(p)) => out.push(redis::cmd("AUTH").arg(u).arg(p).get_packed_command()),
            (None, Some(p)) => out.push(redis::cmd("AUTH").arg(p).get_packed_command()),
            _ => {}
        }
        if self.db != 0 {
            out.push(redis::cmd("SELECT").arg(self.db).get_packed_command());
        }
        out
    }
}

impl Limiter {
    /// Prepares `op` on `key` for a binding's own transport (see [`self`]): validates the cost,
    /// reads the clock once (or asks for Redis's `TIME` on a server-clock limiter) and builds
    /// the script call on the prefixed key, as [`Limiter::check`] would.
    pub fn prepare(&self, op: Op, key: &str, cost: u64) -> Result<PreparedCall> {
        self.prepare_at(op, key, cost, self.now())
    }

    /// [`Limiter::prepare`] at an explicit time (several calls at one clock read, as
    /// [`Limiter::check_many`] makes them).
    ///
    /// The limiter's own entry checks (`Limiter::admit`: cost, time, key length) refuse the
    /// calls its store path refuses, with the same error, which is then the call's outcome and
    /// counted as such in its metrics (the call goes no further: no finish follows). A
    /// transport that prepares a call again to resend it (after `NOSCRIPT`, or a redirect)
    /// passes what succeeded the first time, so it counts nothing.
    pub fn prepare_at(&self, op: Op, key: &str, cost: u64, now: Now) -> Result<PreparedCall> {
        let strategy = self.strategy();
        let transform = match op {
            Op::Check => Transform::Check { strategy, cost },
            Op::Forecast => Transform::Forecast { strategy, cost },
            Op::Peek => Transform::Peek { strategy },
        };
        match self.admit(key, now, &transform) {
            Ok(()) => Ok(PreparedCall { call: call::single(&self.full_key(key), now, &transform), op, now }),
            Err(e) => Err(self.observe_error(e)),
        }
    }

    /// One check per key, all at one clock read, as [`Limiter::check_many`] sends them (a bad
    /// cost is one error, as there).
    pub fn prepare_many(&self, keys: &[&str], cost: u64) -> Result<Vec<PreparedCall>> {
        validate::cost(cost).map_err(|e| self.observe_error(e))?;
        let now = self.now();
        keys.iter().map(|k| self.prepare_at(Op::Check, k, cost, now)).collect()
    }

    /// The decision for a prepared call from its transport's outcome: the reply frame, or the
    /// transport's error. A `store_unavailable` (the transport's, a server error, a malformed
    /// reply) goes through the fail policy, as on the store's own path. Counted in the
    /// limiter's metrics as its op, once, as on the store's own path (not timed: the core does
    /// not see when the bytes left).
    pub fn finish(&self, call: &PreparedCall, reply: Result<&[u8]>) -> Result<Decision> {
        self.decide(call.op, &call.call, call.now, reply)
    }

    /// [`Limiter::finish`] for a single-key call (check, peek or forecast: each runs the
    /// strategy's script and answers a decision) prepared by this limiter, from its
    /// [`PreparedCall::ticket`], so that a transport need not keep the prepared call while its
    /// reply is on the way.
    pub fn finish_ticket(&self, ticket: Ticket, reply: Result<&[u8]>) -> Result<Decision> {
        let call = call::decision_call(self.strategy(), ticket.now, ticket.counted);
        self.decide(ticket.op, &call, ticket.now, reply)
    }

    fn decide(&self, op: Op, call: &ScriptCall, now: Now, reply: Result<&[u8]>) -> Result<Decision> {
        let result = match outcome(call, reply).and_then(single).and_then(|r| r.decision()) {
            Ok(d) => Ok(d),
            Err(e) => self.fail_policy().fallback(e, self.strategy().limit(), now.fallback_ms(&**self.clock())),
        };
        self.observe_op(op, result)
    }

    /// Counts `result` as `op`'s outcome (metrics on): a check's, a peek's or a forecast's.
    fn observe_op(&self, op: Op, result: Result<Decision>) -> Result<Decision> {
        match op {
            Op::Check => self.observe(result),
            Op::Peek => self.observe_read(result, false),
            Op::Forecast => self.observe_read(result, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency), enough to vary frames.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn int(&mut self) -> i64 {
            match self.next() % 8 {
                0 => 0,
                1 => 1,
                2 => -1,
                3 => (self.next() % 100) as i64,
                4 => i64::MAX,
                5 => i64::MIN + 1,
                6 => -((self.next() << 20) as i64),
                _ => ((self.next() << 31) | self.next()) as i64,
            }
        }
    }

    fn frame(items: &[i64]) -> Vec<u8> {
        let mut f = format!("*{}\r\n", items.len()).into_bytes();
        for i in items {
            f.extend_from_slice(format!(":{i}\r\n").as_bytes());
        }
        f
    }

    #[test]
    fn the_integer_reader_agrees_with_the_parser() {
        let strategy = crate::Strategy::gcra(10, 1000, None).expect("valid strategy");
        let call = call::decision_call(&strategy, Now::Server, None);
        let mut rng = Lcg(7);
        let mut fast = 0;
        for n in 0..20_000 {
            // Mostly sane decisions (the fast path), then anything: other lengths, wild values,
            // and single-byte damage anywhere in the frame.
            let limit = 1 + (rng.next() % 1_000_000) as i64;
            let allowed = rng.next() % 2;
            let mut items = vec![
                allowed as i64,
                limit,
                (rng.next() as i64) % (limit + 1),
                rng.int(),
                if allowed == 1 { 0 } else { 1 + (rng.next() % 5000) as i64 },
                rng.int(),
            ];
            if n % 3 == 1 {
                let i = (rng.next() % 6) as usize;
                items[i] = rng.int();
            }
            if n % 11 == 2 {
                items.truncate((rng.next() % 7) as usize);
            }
            if n % 13 == 3 {
                items.push(rng.int());
            }
            let mut f = frame(&items);
            if n % 5 == 4 {
                let i = (rng.next() as usize) % f.len();
                f[i] = b"*:-+$0123456789\r\nx"[(rng.next() % 18) as usize];
            }
            if n % 17 == 5 {
                f.truncate((rng.next() as usize) % f.len());
            }
            if n % 19 == 6 {
                f.extend_from_slice(b":1\r\n");
            }
            let got = outcome(&call, Ok(&f));
            let want = parsed(&call, &f);
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "frame {:?}", String::from_utf8_lossy(&f));
            fast += usize::from(int_array::<6>(&f).is_some());
        }
        assert!(fast > 5_000, "the fast path was taken {fast} times");
    }

    #[test]
    fn the_integer_reader_takes_only_the_plain_form() {
        assert_eq!(int_array::<2>(b"*2\r\n:1\r\n:-20\r\n"), Some([1, -20]));
        for f in [
            &b"*2\r\n:1\r\n:2\r\n:3\r\n"[..],
            b"*2\r\n:1\r\n",
            b"*2\r\n:+1\r\n:2\r\n",
            b"*2\r\n:1\r\n$1\r\n2\r\n",
            b"*2\r\n:1\r\n:1234567890123456789\r\n",
            b"*2\r\n:1\n:2\r\n",
            b"*02\r\n:1\r\n:2\r\n",
            b"*2\r\n:-\r\n:2\r\n",
            b"-ERR nope\r\n",
        ] {
            let f: &[u8] = f;
            if f == b"*02\r\n:1\r\n:2\r\n" {
                // Leading zeros are digits: 02 is 2, as redis-rs reads it.
                assert_eq!(int_array::<2>(f), Some([1, 2]));
                continue;
            }
            assert_eq!(int_array::<2>(f), None, "{:?}", String::from_utf8_lossy(f));
        }
    }
}
