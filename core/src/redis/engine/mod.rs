//! The Redis protocol engine: every rule of one script call, with no I/O (the quinn-proto / h2
//! split: the protocol apart from the sockets).
//!
//! A call is an [`Exchange`]: a prepared [`ScriptCall`] and the store's [`Rules`]. A driver
//! (a blocking socket, a tokio connection, a binding's own socket, a REST client) does only
//! this:
//!
//! 1. Send the current attempt: [`Exchange::write`] (RESP) or [`Exchange::commands`] (the
//!    same commands as argument lists, for a transport that encodes them otherwise). It gets
//!    [`Exchange::replies`] reply frames back, in order; pipelining calls is fine.
//! 2. Feed each reply frame, whole, to [`Exchange::feed`] (a transport that does not receive
//!    RESP writes its reply as RESP first: [`resp::write_int`] and its siblings). The answer
//!    is a [`Step`]: [`Step::More`] (feed the attempt's next frame), [`Step::Done`] (the call's
//!    outcome, or its coded failure), or [`Step::Again`] (send the next attempt, to where
//!    [`To`] says, after `pause`).
//! 3. If the connection could not be made (nothing was written), ask [`Driven::unsent`]; if
//!    it failed or timed out after the call was written, the call is over: [`lost`] or
//!    [`timed_out`] is its error, and the connection is dropped (a late reply must never be
//!    read as another call's).
//!
//! The rules, each written once here:
//!
//! - **At most once**: only a reply that the server sends *before* running anything asks for
//!   another attempt: `MOVED`, `ASK` and `TRYAGAIN` (on a cluster), `NOSCRIPT` and `ERR
//!   Function not found` (once: the fallback's own miss ends the call). Every other reply, and
//!   every failure after the bytes were written, ends the call. A connection that could not be
//!   made wrote nothing, so a cluster call may go to the slot's new master ([`To::Reroute`]).
//! - **Bounded**: at most [`MAX_ATTEMPTS`] attempts; the time bound is the driver's (it owns
//!   the clock), with this module's error words ([`timed_out`]).
//! - **Scripting modes**: `FCALL` on a loaded library, else `EVALSHA`; the one fallback after a
//!   miss is `FUNCTION LOAD REPLACE` and `FCALL` pipelined, or `EVAL` (which caches the script).
//! - **Redirects**: `ASKING` rides before the call after `ASK`; `MOVED` names the slot's new
//!   master for the router above to learn; `TRYAGAIN` pauses [`TRYAGAIN_PAUSE`]. An error that
//!   says the slot map is stale (`CLUSTERDOWN`, `READONLY`, `MASTERDOWN`) ends the call and
//!   [`Driven::map_stale`] says so.
//! - **Durable replicas**: `WAIT replicas timeout` pipelined after the call (and after its
//!   fallback); fewer acknowledgements than asked fail the call (`store_unavailable`) although
//!   the master counted it, because a failover now could lose that charge.
//!
//! The fail policy is the limiter's, applied to the `store_unavailable` a call ends with (the
//! same for every driver, as this module's errors are). `docs/redis.md` ("How a call travels")
//! draws the drivers around it.

pub mod resp;
#[cfg(test)]
pub(super) mod tests;
#[cfg(test)]
mod tests_resp3;
pub mod value;

use std::time::Duration;

use super::call::{self, Outcome, ScriptCall};
#[cfg(feature = "redis")]
use super::scripts::LIBRARY;
use crate::error::{Error, Result};

/// Attempts one call may take: the first, then redirects, pauses, a reroute and the fallback.
pub const MAX_ATTEMPTS: u8 = 5;

/// The pause before a call answered `TRYAGAIN` is sent again.
pub const TRYAGAIN_PAUSE: Duration = Duration::from_millis(10);

/// How the store runs its scripts, chosen once at connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invoke {
    /// `FCALL` on the loaded library. Only the RESP store's (the `redis` feature): the REST
    /// protocol has no `FUNCTION`, so the WebAssembly build carries no library to load.
    #[cfg(feature = "redis")]
    Functions,
    /// `EVALSHA` / `EVAL`.
    Scripts,
}

/// Make each charge durable before admitting it: `WAIT replicas timeout_ms` after the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durable {
    /// Replicas that must acknowledge the call's writes.
    pub replicas: u32,
    /// How long the server waits for them, in ms (`WAIT`'s timeout; never 0, which waits forever).
    pub timeout_ms: u64,
}

/// A store's rules for every call: fixed at connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// `FCALL` or `EVALSHA`.
    pub invoke: Invoke,
    /// `WAIT` after each call.
    pub durable: Option<Durable>,
    /// A cluster: `MOVED`, `ASK` and `TRYAGAIN` are followed (elsewhere they end the call).
    pub cluster: bool,
}

impl Rules {
    /// `WAIT` after each call. Never in a build without the `redis` feature (the WebAssembly
    /// module), whose only rules are the REST store's: the compiler then drops the `WAIT` code.
    fn durable(self) -> Option<Durable> {
        if cfg!(feature = "redis") { self.durable } else { None }
    }

    /// A cluster. Never without the `redis` feature, as [`Rules::durable`]: the redirects'
    /// reading (`MOVED`, `ASK`, `TRYAGAIN`) is dropped there.
    fn cluster(self) -> bool {
        cfg!(feature = "redis") && self.cluster
    }
}

/// Where a call is in its route: attempts so far, and how the current one is sent. `Copy` and
/// one `u32` wide ([`Attempt::bits`]), so a transport in another language keeps it as a number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attempt {
    hops: u8,
    asking: bool,
    fallback: bool,
    redirected: bool,
}

impl Attempt {
    /// Whether this attempt sends `ASKING` first.
    pub fn asking(self) -> bool {
        self.asking
    }

    /// Whether this attempt sends the call's fallback (`EVAL`, or `FUNCTION LOAD` + `FCALL`).
    pub fn fallback(self) -> bool {
        self.fallback
    }

    /// Whether a redirect sent the call here (a node the slot map did not choose).
    pub fn redirected(self) -> bool {
        self.redirected
    }

    /// This attempt sending the call's fallback (the attempt after a miss).
    pub fn with_fallback(self) -> Attempt {
        Attempt { fallback: true, ..self }
    }

    /// A number for a transport to keep (the first attempt is 0).
    pub fn bits(self) -> u32 {
        u32::from(self.hops)
            | u32::from(self.asking) << 8
            | u32::from(self.fallback) << 9
            | u32::from(self.redirected) << 10
    }

    /// The attempt [`Attempt::bits`] made.
    pub fn from_bits(bits: u32) -> Attempt {
        Attempt {
            hops: bits as u8,
            asking: bits & 1 << 8 != 0,
            fallback: bits & 1 << 9 != 0,
            redirected: bits & 1 << 10 != 0,
        }
    }

    /// The attempt that sends the call to the slot's master after a fresh read of the slot map,
    /// when the connection for this one could not be made (nothing was written): `None` for a
    /// node a redirect named (only the map's choice is rerouted from) or a call that took
    /// every attempt.
    pub fn rerouted(self) -> Option<Attempt> {
        if self.redirected {
            return None;
        }
        let next = self.next("").ok()?;
        Some(Attempt { asking: false, redirected: false, ..next })
    }

    /// The attempt after this one, or the error of a call that took them all.
    fn next(self, script: &str) -> Result<Attempt> {
        if self.hops + 1 >= MAX_ATTEMPTS {
            return Err(Error::store(format!("{script}: more than {MAX_ATTEMPTS} redirects")));
        }
        Ok(Attempt { hops: self.hops + 1, ..self })
    }
}

/// Where the next attempt goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum To {
    /// The node that answered.
    Same,
    /// `MOVED`: the slot's master is now `host:port` (an empty host is the answering node's).
    Moved {
        /// The slot that moved.
        slot: u16,
        /// Its new master's host (empty: the node that answered).
        host: String,
        /// Its new master's port.
        port: u16,
    },
    /// `ASK`: this call only goes to `host:port` (the attempt sends `ASKING` first).
    Ask {
        /// The importing node's host (empty: the node that answered).
        host: String,
        /// The importing node's port.
        port: u16,
    },
    /// Nothing was written: the slot's master as the slot map names it after a fresh read
    /// (a failover); if that is the same node, the call fails with the connection's error.
    Reroute,
}

/// What the driver does next.
#[derive(Debug)]
pub enum Step<O = Outcome> {
    /// Feed the attempt's next reply frame.
    More,
    /// Send the next attempt ([`Exchange::write`] now writes it) to `to`, after `pause`.
    Again {
        /// Where.
        to: To,
        /// How long to wait first (`TRYAGAIN`).
        pause: Duration,
    },
    /// The call is over: its outcome, or a `store_unavailable` for the fail policy.
    Done(Result<O>),
}

/// What the async driver and the router send and feed: a script call's [`Exchange`], or the
/// router's round of other commands (`cluster/command.rs`), which follows the same redirects.
#[cfg(feature = "redis")]
pub(crate) trait Driven {
    /// What the exchange ends with.
    type Out;
    /// How many reply frames the current attempt gets back.
    fn replies(&self) -> usize;
    /// The current attempt's commands, RESP-encoded, appended to `out`.
    fn write(&self, out: &mut Vec<u8>);
    /// Feeds the current attempt's next reply frame.
    fn feed(&mut self, frame: &[u8]) -> Step<Self::Out>;
    /// The connection for the current attempt could not be made, so nothing was written:
    /// `cause` ends the call, unless a cluster's slot map may name another master now.
    fn unsent(&mut self, cause: Error) -> Step<Self::Out>;
    /// Whether the exchange ended on an error that says the slot map is stale (`CLUSTERDOWN`,
    /// `READONLY`, `MASTERDOWN`): a router reads the map again.
    fn map_stale(&self) -> bool;
}

/// An exchange driven through a reference: the caller keeps it, and the future that drives it
/// holds 8 bytes, not a second copy (`RedisStore::call`: every async call boxes that future).
#[cfg(feature = "redis")]
impl<X: Driven + ?Sized> Driven for &mut X {
    type Out = X::Out;
    fn replies(&self) -> usize {
        (**self).replies()
    }
    fn write(&self, out: &mut Vec<u8>) {
        (**self).write(out);
    }
    fn feed(&mut self, frame: &[u8]) -> Step<Self::Out> {
        (**self).feed(frame)
    }
    fn unsent(&mut self, cause: Error) -> Step<Self::Out> {
        (**self).unsent(cause)
    }
    fn map_stale(&self) -> bool {
        (**self).map_stale()
    }
}

#[cfg(feature = "redis")]
impl Driven for Exchange<'_> {
    type Out = Outcome;
    fn replies(&self) -> usize {
        Exchange::replies(self)
    }
    fn write(&self, out: &mut Vec<u8>) {
        Exchange::write(self, out);
    }
    fn feed(&mut self, frame: &[u8]) -> Step {
        Exchange::feed(self, frame)
    }
    fn unsent(&mut self, cause: Error) -> Step {
        match self.attempt.rerouted().filter(|_| self.rules.cluster()) {
            Some(a) => self.again(a, To::Reroute, Duration::ZERO),
            None => Step::Done(Err(cause)),
        }
    }
    fn map_stale(&self) -> bool {
        self.map_stale
    }
}

/// What an attempt's call frame said, held until the attempt's last frame (`WAIT`'s) is read.
#[derive(Debug)]
enum Held {
    Outcome(Result<Outcome>),
    Again(Attempt, To, Duration),
}

/// One call in flight: the prepared call, the store's rules and where the call is.
#[derive(Debug)]
pub struct Exchange<'c> {
    call: &'c ScriptCall,
    rules: Rules,
    attempt: Attempt,
    /// Frames of the current attempt fed so far.
    fed: usize,
    held: Option<Held>,
    map_stale: bool,
}

impl<'c> Exchange<'c> {
    /// A call's first attempt.
    pub fn new(call: &'c ScriptCall, rules: Rules) -> Exchange<'c> {
        Exchange::at(call, rules, Attempt::default())
    }

    /// A call at `attempt` (a transport that kept [`Attempt::bits`] between replies).
    pub fn at(call: &'c ScriptCall, rules: Rules, attempt: Attempt) -> Exchange<'c> {
        Exchange { call, rules, attempt, fed: 0, held: None, map_stale: false }
    }

    /// The current attempt.
    pub fn attempt(&self) -> Attempt {
        self.attempt
    }

    /// Whether the current attempt is the plain one: the call's first command alone, with no
    /// `ASKING`, fallback or `WAIT` (every call on a stable node).
    pub fn plain(&self) -> bool {
        !self.attempt.asking && !self.attempt.fallback && self.rules.durable().is_none()
    }

    /// How many reply frames the current attempt gets back.
    pub fn replies(&self) -> usize {
        replies(self.rules, self.attempt)
    }

    /// Which of the current attempt's reply frames is the call's own (`ASKING`'s and `FUNCTION
    /// LOAD`'s come before it, `WAIT`'s after).
    pub fn call_frame(&self) -> usize {
        self.replies() - 1 - usize::from(self.rules.durable().is_some())
    }

    /// The current attempt's commands, RESP-encoded, appended to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        self.commands(|args| resp::write_command(out, args.iter().copied()));
    }

    /// The current attempt's commands, each as its arguments, in order: `ASKING`, the call (or
    /// its fallback's commands), `WAIT`.
    pub fn commands(&self, mut f: impl FnMut(&[&[u8]])) {
        if self.attempt.asking {
            f(&[b"ASKING"]);
        }
        let call = self.call;
        match (self.attempt.fallback, self.rules.invoke) {
            #[cfg(feature = "redis")]
            (false, Invoke::Functions) => script(call, b"FCALL", call.script.function.as_bytes(), &mut f),
            (false, Invoke::Scripts) => script(call, b"EVALSHA", call.script.sha.as_bytes(), &mut f),
            #[cfg(feature = "redis")]
            (true, Invoke::Functions) => {
                f(&LIBRARY.load_command());
                script(call, b"FCALL", call.script.function.as_bytes(), &mut f);
            }
            (true, Invoke::Scripts) => script(call, b"EVAL", call.script.source.as_bytes(), &mut f),
        }
        if let Some(d) = self.rules.durable() {
            let (mut r, mut t) = ([0; 20], [0; 20]);
            f(&[b"WAIT", resp::decimal(u64::from(d.replicas), &mut r), resp::decimal(d.timeout_ms, &mut t)]);
        }
    }

    /// Feeds the current attempt's next reply frame (one whole frame: [`resp::frame_len`]).
    pub fn feed(&mut self, frame: &[u8]) -> Step {
        let at = self.fed;
        self.fed += 1;
        let call_at = self.call_frame();
        if at < call_at {
            // `ASKING`'s reply, `FUNCTION LOAD`'s: the call's own reply says what matters.
            return Step::More;
        }
        if at == call_at {
            let held = self.read(frame);
            if self.rules.durable().is_none() {
                return self.settle(held);
            }
            self.held = Some(held);
            return Step::More;
        }
        match self.held.take() {
            Some(Held::Outcome(Ok(o))) => Step::Done(self.durable(frame).map(|()| o)),
            Some(held) => self.settle(held),
            // More frames than the attempt gets: the driver is out of step.
            None => Step::Done(Err(Error::store(format!("{}: a reply no command asked for", self.call.script.name)))),
        }
    }

    fn settle(&mut self, held: Held) -> Step {
        match held {
            Held::Outcome(o) => Step::Done(o),
            Held::Again(a, to, pause) => self.again(a, to, pause),
        }
    }

    fn again(&mut self, attempt: Attempt, to: To, pause: Duration) -> Step {
        self.attempt = attempt;
        self.fed = 0;
        Step::Again { to, pause }
    }

    /// What the call's own reply frame says.
    fn read(&mut self, frame: &[u8]) -> Held {
        let name = self.call.script.name;
        match redirect(self.rules, self.attempt, frame, name) {
            Some(Ok((attempt, to, pause))) => return Held::Again(attempt, to, pause),
            Some(Err(e)) => return Held::Outcome(Err(e)),
            None => {}
        }
        if let Some((code, _)) = resp::error(frame) {
            self.map_stale = self.rules.cluster() && stale(code);
        }
        Held::Outcome(decode(self.call, frame))
    }

    /// `WAIT`'s reply: enough replicas acknowledged the call's writes.
    fn durable(&self, frame: &[u8]) -> Result<()> {
        let Some(d) = self.rules.durable() else { return Ok(()) };
        match resp::int(frame) {
            Some(n) if n >= i64::from(d.replicas) => Ok(()),
            Some(n) => Err(Error::store(format!(
                "not durable: the charge reached {n} of {} replicas within {} ms (durable_replicas)",
                d.replicas, d.timeout_ms
            ))),
            None => Err(Error::store(format!("not durable: WAIT answered {:?}", String::from_utf8_lossy(frame)))),
        }
    }
}

/// How many reply frames an attempt gets back: `ASKING`'s, `FUNCTION LOAD`'s (a function's
/// fallback), the call's, `WAIT`'s.
pub fn replies(rules: Rules, attempt: Attempt) -> usize {
    let call = match (attempt.fallback, rules.invoke) {
        #[cfg(feature = "redis")]
        (true, Invoke::Functions) => 2,
        _ => 1,
    };
    usize::from(attempt.asking) + call + usize::from(rules.durable().is_some())
}

/// Whether a reply frame says the node lacks the call's script (`NOSCRIPT`) or function (`ERR
/// Function not found`: flushed, or a restarted server). Nothing ran.
pub fn is_missing(frame: &[u8]) -> bool {
    resp::error(frame).is_some_and(|(code, detail)| missing(code, detail))
}

/// Whether an error frame says a cluster's slot map is stale (`CLUSTERDOWN`, `READONLY`,
/// `MASTERDOWN`): the call ends, and a router reads the map again.
pub fn says_map_stale(frame: &[u8]) -> bool {
    resp::error(frame).is_some_and(|(code, _)| stale(code))
}

fn stale(code: &str) -> bool {
    matches!(code, "CLUSTERDOWN" | "READONLY" | "MASTERDOWN")
}

fn missing(code: &str, detail: &str) -> bool {
    code == "NOSCRIPT" || code == "ERR" && detail.starts_with("Function not found")
}

/// What a call's reply frame, read for `attempt`, asks for: `None` when it is the call's reply
/// (an outcome, or an error that ends the call); else the next attempt, where it goes and after
/// what pause, or the error of a call that took [`MAX_ATTEMPTS`]. Only a reply that the server
/// sends before running anything asks for another attempt (see [`self`]: at most once).
pub fn redirect(rules: Rules, attempt: Attempt, frame: &[u8], script: &str) -> Option<Result<(Attempt, To, Duration)>> {
    let (code, detail) = resp::error(frame)?;
    let a = attempt;
    let next = |asking: bool, fallback: bool, redirected: bool| {
        a.next(script).map(|n| Attempt { asking, fallback, redirected: a.redirected || redirected, ..n })
    };
    let (attempt, to, pause) = match code {
        // A miss answered to the fallback itself ends the call: it is never sent a third time.
        _ if missing(code, detail) && !a.fallback => (next(a.asking, true, false), To::Same, Duration::ZERO),
        "MOVED" if rules.cluster() => {
            let mut words = detail.split_whitespace();
            let slot = words.next().and_then(|s| s.parse().ok())?;
            let (host, port) = words.next().and_then(address)?;
            (next(false, a.fallback, true), To::Moved { slot, host, port }, Duration::ZERO)
        }
        "ASK" if rules.cluster() => {
            let (host, port) = detail.split_whitespace().nth(1).and_then(address)?;
            (next(true, a.fallback, true), To::Ask { host, port }, Duration::ZERO)
        }
        // Same node, still `ASKING` if it was.
        "TRYAGAIN" if rules.cluster() => (next(a.asking, a.fallback, false), To::Same, TRYAGAIN_PAUSE),
        _ => return None,
    };
    Some(attempt.map(|a| (a, to, pause)))
}

/// Writes one script command: `verb name numkeys keys... args...`.
fn script(call: &ScriptCall, verb: &[u8], name: &[u8], f: &mut impl FnMut(&[&[u8]])) {
    let mut n = [0; 20];
    let mut args: Vec<&[u8]> = Vec::with_capacity(3 + call.keys.len() + call.args.len());
    args.extend([verb, name, resp::decimal(call.keys.len() as u64, &mut n)]);
    args.extend(call.keys.iter().map(String::as_bytes));
    args.extend(call.args.iter());
    f(&args);
}

/// `host:port` of a redirect (the host may be empty: the answering node's).
fn address(s: &str) -> Option<(String, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    Some((host.to_string(), port.parse().ok()?))
}

/// The outcome of a call's reply frame, its integers read where they lie ([`resp::ints`]) for
/// every shape. A server's error reply, and a reply that is not a sane answer to `call`, are
/// `store_unavailable` (the engine's redirects were read before: [`Exchange::feed`]).
pub fn decode(call: &ScriptCall, frame: &[u8]) -> Result<Outcome> {
    if frame.first() == Some(&b'-') {
        return Err(server_error(call.script.name, frame));
    }
    if let Some(reply) = resp::ints(frame, |array, f| call::decode_ints(call, array, f, |_| {})) {
        return Ok(reply);
    }
    // No answer to `call`: the error says what came, as a value when it reads as one.
    Err(match resp::value(frame) {
        Some(value) => call::bad(call.script, &value),
        None => {
            let excerpt: String = String::from_utf8_lossy(frame).chars().take(120).collect();
            Error::store(format!("unreadable reply from {}: {excerpt:?}", call.script.name))
        }
    })
}

/// A server's error reply to `name`'s call: `store_unavailable` naming the script and the
/// server's error, the same words whichever driver read it.
fn server_error(name: &str, frame: &[u8]) -> Error {
    match resp::error(frame) {
        Some((code, detail)) => Error::store(format!("{name} failed: {code} {detail}")),
        None => Error::store(format!("unreadable reply from {name}: {:?}", String::from_utf8_lossy(frame))),
    }
}

/// The error of a call that got no reply within `timeout_ms` (`store_unavailable`, the same
/// words on every path).
pub fn timed_out(timeout_ms: u64) -> Error {
    Error::store(format!("timed out: Redis did not answer within {timeout_ms} ms"))
}

/// `work`, or [`timed_out`] when it gives no answer within `timeout` (on the current runtime's
/// timer): the one bound of the store's async commands (connects, map and master lookups,
/// loading the library, the store runtime's own calls).
pub async fn within<T>(timeout: std::time::Duration, work: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(timeout, work).await.unwrap_or_else(|_| Err(timed_out(timeout.as_millis() as u64)))
}

/// [`timed_out`], naming what the connection said.
pub fn timed_out_because(timeout_ms: u64, cause: &dyn std::fmt::Display) -> Error {
    Error::store(format!("timed out: Redis did not answer within {timeout_ms} ms ({cause})"))
}

/// The error of a call whose connection failed (refused, reset, closed) after or before it
/// was written (`store_unavailable`).
pub fn lost<D: std::fmt::Display + ?Sized>(cause: &D) -> Error {
    Error::store(cause.to_string())
}

/// The error of a call made after the store was closed.
pub fn closed() -> Error {
    Error::store("the Redis store is closed")
}
