//! Calls for a binding that brings its own transport: the binding-owned-socket driver of
//! the protocol engine (`core/src/redis/engine/`).
//!
//! Why: when the Rust store does the I/O, a binding whose runtime is an event loop (Node) pays
//! two thread hops per call, more than the round trip itself. Such a binding writes the bytes
//! on its own socket and hands the reply back here. Everything that decides stays in the core
//! (the script, keys, arguments, clock read, commands of each attempt, what each reply means,
//! the fail policy); the transport moves bytes and follows the engine's rules:
//!
//! 1. Write [`PreparedCall::write`] with a fresh [`Hop`] (`FCALL` on a store that runs
//!    functions, [`super::RedisStore::uses_functions`], else `EVALSHA`). Pipelining is fine;
//!    replies come back in order.
//! 2. If the reply [`is_missing`] (the server lost the script or function), write it once more
//!    with [`Hop::with_fallback`] ([`replies`] replies, the call's last). No other reply is ever
//!    answered by a resend.
//! 3. Hand the call's reply frame (complete RESP bytes) to [`crate::Limiter::finish`] (or,
//!    keeping only the call's [`PreparedCall::ticket`], [`crate::Limiter::finish_ticket`]). If
//!    no reply came within the store's `timeout_ms`, or the connection failed, hand it an
//!    error made with [`transport_error`] (or [`timed_out`]) instead: the limiter's fail policy
//!    decides, exactly as on the store's own paths. A timed-out call is never sent again, and
//!    its late reply is read and dropped ([`conn::Conn`] keeps both rules).
//!
//! A new connection sends [`Endpoint::handshake`] (RESP3's `HELLO 3` when the URL asks for it,
//! as the store's own connections log in) then [`preload_for`], so calls pipelined on it never
//! meet a miss. A socket's state is a [`conn::Conn`]: the replies it owes, in order, each
//! call's deadline, and what every frame read back asks for (read by the engine's one RESP
//! scanner, [`frame_len`], RESP3 pushes dropped): the binding keeps the socket, a timer and its
//! calls by number, and nothing else. It does not route by slot by itself: on a cluster, [`super::routed`]
//! says which master each call goes to and what a redirect asks for; under Sentinel a binding
//! uses the store's own calls ([`super::RedisStore::is_routed`], [`super::RedisStore::routes`]).
//!
//! Nothing here does I/O or reads a clock other than the limiter's own (once, in
//! [`crate::Limiter::prepare`]).

pub mod conn;

use super::call::{self, Outcome, ScriptCall};
pub use super::engine::resp::{Garbage, frame_len};
use super::engine::{self, Exchange, Invoke, Rules, resp};
pub use super::engine::{lost as transport_error, timed_out};
pub use super::routed::Hop;
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::limiter::Limiter;
use crate::store::Now;

pub use super::connect::Endpoint;
pub use super::prepared::{Op, PreparedCall};

/// What a transport keeps per single-key call in flight, instead of the [`PreparedCall`], to
/// finish it with [`Limiter::finish_ticket`]: the time it was prepared at and, for a
/// fixed-window check on the caller's clock, the cost it was sent with.
///
/// Why a cost: such a check goes in the script's `count` mode (docs/redis.md), whose reply
/// is the window's count alone; the decision is derived from that count, the cost and the
/// window, so the time alone cannot decode it. It is `Copy` and two numbers wide (Node keeps
/// two `f64`s, [`Ticket::counted`] 0 for none). The core makes it; a transport only hands it
/// back.
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
    /// What [`Limiter::finish_ticket`] needs of a single-key call (check, peek or forecast) to
    /// finish it without the call itself.
    pub fn ticket(&self) -> Ticket {
        Ticket { op: self.op, now: self.now, counted: call::counted_cost(&self.call) }
    }

    /// A single-key call's reply, decoded (`store_unavailable` for a transport error, a server
    /// error or a malformed reply).
    pub(crate) fn single_reply(&self, reply: Result<&[u8]>) -> Result<crate::store::Reply> {
        outcome(&self.call, reply).and_then(Outcome::into_single)
    }

    /// A multi call's reply, decoded (`store_unavailable` for a transport error, a server
    /// error or a malformed reply).
    pub(crate) fn multi_reply(&self, reply: Result<&[u8]>) -> Result<crate::store::MultiReply> {
        outcome(&self.call, reply).and_then(Outcome::into_multi)
    }

    /// The call's attempt `hop` as the store itself sends it, appended to `out` (a transport's
    /// reusable buffer); [`replies`] replies, the call's last. A fresh hop is the first send:
    /// `FCALL` when `functions` ([`super::RedisStore::uses_functions`]), else `EVALSHA`.
    /// [`Hop::with_fallback`] is what to send once after a reply that [`is_missing`]: `EVAL`, or
    /// `FUNCTION LOAD REPLACE` and `FCALL` pipelined. On a cluster [`super::routed`] says the
    /// hop (`ASKING` first when [`Hop::asking`]).
    pub fn write(&self, functions: bool, hop: Hop, out: &mut Vec<u8>) {
        Exchange::at(&self.call, rules(functions), hop).write(out);
    }

    /// The slot of the call's (first) key, for [`super::routed::Routes::node`].
    pub fn slot(&self) -> u16 {
        super::cluster::slot::slot(self.call.keys.first().map_or(&b""[..], |k| k.as_bytes()))
    }
}

/// The rules of a binding's own transport: never durable (a durable store keeps its calls on
/// the core's connections), and the cluster's redirects are [`super::routed`]'s to follow.
pub(super) fn rules(functions: bool) -> Rules {
    Rules { invoke: if functions { Invoke::Functions } else { Invoke::Scripts }, durable: None, cluster: false }
}

/// How many replies [`PreparedCall::write`] of `hop` gets back (the call's is the last).
pub fn replies(functions: bool, hop: Hop) -> usize {
    engine::replies(rules(functions), hop)
}

/// Whether a reply frame says the server lacks the call's script (`NOSCRIPT`) or function
/// (`ERR Function not found`: flushed, or a restarted server): send the call once more with
/// [`Hop::with_fallback`]. No other reply is ever answered by a resend.
pub fn is_missing(reply: &[u8]) -> bool {
    engine::is_missing(reply)
}

/// What a new connection sends after its handshake, one command per reply: `FUNCTION LOAD
/// REPLACE` of the library when `functions`, else `SCRIPT LOAD` of every script. Calls pipelined
/// on a fresh connection (a restarted server's too) then never meet a miss, whose resend would
/// run them after calls made later. (Only a flush while connected can still reorder a pipeline
/// that way.) A failed load is harmless: the call meets the miss and gets its fallback.
pub fn preload_for(functions: bool) -> Vec<Vec<u8>> {
    if functions {
        return vec![resp::command(&super::scripts::LIBRARY.load_command())];
    }
    super::scripts::SCRIPTS.all().iter().map(|s| resp::command(&[b"SCRIPT", b"LOAD", s.source.as_bytes()])).collect()
}

/// The reply decoded as every path decodes it (the engine's `decode`): a server error is
/// `store_unavailable` naming the script, anything malformed too.
pub(super) fn outcome(call: &ScriptCall, reply: Result<&[u8]>) -> Result<Outcome> {
    super::engine::decode(call, reply?)
}

/// `DEL key`, RESP-encoded: [`Limiter::reset`] on the wire (its reply is `:n`, or an error).
pub fn del(full_key: &str) -> Vec<u8> {
    resp::command(&[b"DEL", full_key.as_bytes()])
}

/// The outcome of a `DEL` sent for a reset: any integer reply is success.
pub fn finish_del(reply: Result<&[u8]>) -> Result<()> {
    let reply = reply?;
    if resp::int(reply).is_some() {
        return Ok(());
    }
    Err(Error::store(match resp::error(reply) {
        Some((code, detail)) => format!("DEL failed: {code} {detail}"),
        None => format!("unexpected reply to DEL: {:?}", String::from_utf8_lossy(reply)),
    }))
}

impl Limiter {
    /// The decision for a prepared call from its transport's outcome: the reply frame, or the
    /// transport's error. A `store_unavailable` (the transport's, a server error, a malformed
    /// reply) goes through the fail policy, as on the store's own path. Counted in the
    /// limiter's metrics as its op, once, as on the store's own path (not timed: the core does
    /// not see when the bytes left).
    pub fn finish(&self, call: &PreparedCall, reply: Result<&[u8]>) -> Result<Decision> {
        self.decide_reply(call.op, &call.call, call.now, reply)
    }

    /// [`Limiter::finish`] for a single-key call (check, peek or forecast: each runs the
    /// strategy's script and answers a decision) prepared by this limiter, from its
    /// [`PreparedCall::ticket`], so that a transport need not keep the prepared call while its
    /// reply is on the way.
    pub fn finish_ticket(&self, ticket: Ticket, reply: Result<&[u8]>) -> Result<Decision> {
        let call = call::decision_call(self.strategy(), ticket.now, ticket.counted);
        self.decide_reply(ticket.op, &call, ticket.now, reply)
    }

    fn decide_reply(&self, op: Op, call: &ScriptCall, now: Now, reply: Result<&[u8]>) -> Result<Decision> {
        self.decide(op, now, outcome(call, reply))
    }
}
