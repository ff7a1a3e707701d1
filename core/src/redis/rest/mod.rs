//! The Redis store over the Upstash REST protocol: the engine's script calls as HTTP requests
//! and the JSON replies fed back to the engine. No I/O here (sans-IO, as the engine): a driver
//! (JavaScript's `fetch` in the WebAssembly build; natively, the tests' small HTTP client,
//! `core/tests/support/rest_client.rs`) only moves bytes.
//!
//! The protocol (Upstash's REST API, which the test front end `tests/restfront/` also speaks):
//!
//! - A command is a JSON array of strings, `["EVALSHA", sha, "1", key, arg...]`, sent as
//!   `POST /` with `Authorization: Bearer <token>` and `Content-Type: application/json`. The
//!   reply is `{"result": R}` (HTTP 200) or `{"error": "NOSCRIPT ..."}` (HTTP 400). `R` is the
//!   Redis reply in JSON: an integer is a number, a bulk string a string, nil `null`, an array
//!   an array.
//! - Several commands go as `POST /pipeline` with an array of such arrays, and come back as an
//!   array of `{"result": R}` / `{"error": E}`, one per command, in order (HTTP 200).
//! - A refused token is HTTP 401 (or 403); every other status or body is not a reply.
//!
//! What each reply means is the engine's (`super::engine`): each `{"result"}` or `{"error"}`
//! is written as the RESP frame Redis would have sent and fed to the engine's `Exchange`,
//! so NOSCRIPT → `EVAL` once, at most once (nothing else is ever sent again), and the error
//! words are the RESP path's. A call that ends on an HTTP failure, a refused token, a reply
//! that is not one, or a timeout ends with `store_unavailable`, which the limiter's fail
//! policy turns into its decision ([`limiter`]).
//!
//! A [`Batch`] is one or more script calls sent together: one call is `POST /`, several (a
//! `check_many`) one `POST /pipeline`; after a `NOSCRIPT` only the calls that missed are sent
//! again, with `EVAL`. A multi-dimensional check is one call of the fused script (the same
//! call as on RESP), so `all` and `any` are atomic.
//!
//! Upstash runs a script under its global lock unless the script's first line is
//! `#!lua flags=allow-key-locking`: then it locks only the keys in `KEYS`, and calls on other
//! keys run in parallel. Every throttlekit script touches only its `KEYS`, so [`Locking::Keys`]
//! sends each script with that line first: its own source and SHA1 ([`flagged`]), the same
//! decisions.

mod json;
#[cfg(test)]
mod json_tests;
pub mod limiter;
mod shaper;
use std::sync::{Arc, LazyLock};

use self::json::Json;
use super::call::{Outcome, ScriptCall};
use super::engine::value::Value;
use super::engine::{Attempt, Exchange, Invoke, Rules, Step, resp};
/// A request that got no reply within `timeout_ms`, or that failed (refused, reset, closed,
/// aborted): the RESP store's errors, in its words (as `redis::transport` exports them).
pub use super::engine::{lost as transport_error, timed_out};
use super::replay::{Book, Replay};
use super::scripts::{LoadedScript, SCRIPTS};
use crate::error::{Error, Result};

/// The path of one command.
pub const PATH_ONE: &str = "/";
/// The path of several commands in order (not a transaction: each script call is atomic on
/// its own).
pub const PATH_PIPELINE: &str = "/pipeline";

/// The first line of a script that Upstash runs under locks on its `KEYS` only.
pub const KEY_LOCKING_SHEBANG: &str = "#!lua flags=allow-key-locking\n";

/// Which variant of the scripts a store sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Locking {
    /// The scripts as the RESP store sends them (Upstash: its global lock).
    #[default]
    Global,
    /// Each script with [`KEY_LOCKING_SHEBANG`] first (Upstash: locks on its `KEYS` only).
    Keys,
}

/// The rules of every REST call: `EVALSHA` then `EVAL` (Upstash has no `FUNCTION`), no
/// `WAIT`, no cluster redirects (the REST server routes).
const RULES: Rules = Rules { invoke: Invoke::Scripts, durable: None, cluster: false };

/// The scripts with [`KEY_LOCKING_SHEBANG`] first, in [`super::scripts::Scripts::all`]'s order.
static FLAGGED: LazyLock<Vec<LoadedScript>> = LazyLock::new(|| {
    SCRIPTS
        .all()
        .iter()
        .map(|s| {
            let source = format!("{KEY_LOCKING_SHEBANG}{}", s.source);
            LoadedScript {
                name: s.name,
                sha: super::scripts::prefixed_sha(s.name, KEY_LOCKING_SHEBANG, &s.source),
                function: s.function.clone(),
                main_at: s.main_at + KEY_LOCKING_SHEBANG.len(),
                source,
            }
        })
        .collect()
});

/// The [`Locking::Keys`] variant of `script` (one of [`SCRIPTS`]).
pub fn flagged(script: &LoadedScript) -> &'static LoadedScript {
    let at = SCRIPTS.all().iter().position(|s| s.name == script.name).expect("one of the embedded scripts");
    &FLAGGED[at]
}

/// `call` with its script's `locking` variant.
fn with_locking(mut call: ScriptCall, locking: Locking) -> ScriptCall {
    if locking == Locking::Keys {
        call.script = flagged(call.script);
    }
    call
}

/// One HTTP request to make: `POST` to the store's URL followed by `path`, with `body` and the
/// headers of [`headers`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// [`PATH_ONE`] or [`PATH_PIPELINE`].
    pub path: &'static str,
    /// The JSON body.
    pub body: String,
    /// Sent with [`HEX_ENCODING`] (deterministic replay only).
    pub hex: bool,
}

/// The test front end's binary-safe encoding (`tests/restfront/`): every argument and every
/// string in the reply is hex. Deterministic replay's pipelines carry `DUMP`/`RESTORE`
/// payloads, which are binary, so they ask for it; the test front end alone speaks it.
pub const HEX_ENCODING: (&str, &str) = ("Throttlekit-Encoding", "hex");

/// The headers of every request: the Bearer token and the JSON content type.
pub fn headers(token: &str) -> [(&'static str, String); 2] {
    [("Authorization", format!("Bearer {token}")), ("Content-Type", "application/json".to_string())]
}

/// What a driver does after [`Batch::feed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Send [`Batch::request`] (the calls that met `NOSCRIPT`, now with `EVAL`).
    Send,
    /// Every call is over: read the outcomes.
    Done,
}

/// Script calls sent together, each with its own route through the engine.
#[derive(Debug)]
pub struct Batch {
    calls: Vec<ScriptCall>,
    attempts: Vec<Attempt>,
    outcomes: Vec<Option<Result<Outcome>>>,
    replaying: Option<Replaying>,
}

/// Deterministic replay (expiry on the caller's clock, for conformance runs: the RESP store's
/// mode, `crate::redis::replay`): the calls run one after another, each as the replay's round
/// trips, every one a `/pipeline` in [`HEX_ENCODING`].
#[derive(Debug)]
struct Replaying {
    book: ReplayBook,
    now: i64,
    /// The call in flight and its replay.
    at: usize,
    replay: Replay,
}

/// The deadlines of a store in deterministic-replay mode, on the caller's clock, shared by its
/// calls (`Default`: an empty one, for a new store).
#[derive(Clone, Debug, Default)]
pub struct ReplayBook(Arc<crate::lock::Lock<Book>>);

impl ReplayBook {
    fn lock(&self) -> crate::lock::LockGuard<'_, Book> {
        self.0.lock()
    }

    /// Forgets `full_key`'s deadline (it was deleted).
    pub fn forget(&self, full_key: &str) {
        self.lock().forget(full_key);
    }

    /// Every key with a deadline, forgetting them all.
    pub fn take_keys(&self) -> Vec<String> {
        self.lock().take_keys()
    }
}

impl Batch {
    /// The calls, with their scripts' `locking` variant.
    pub(crate) fn new(calls: Vec<ScriptCall>, locking: Locking) -> Batch {
        let n = calls.len();
        Batch {
            calls: calls.into_iter().map(|c| with_locking(c, locking)).collect(),
            attempts: vec![Attempt::default(); n],
            outcomes: (0..n).map(|_| None).collect(),
            replaying: None,
        }
    }

    /// The same calls in deterministic-replay mode at `now` (the caller's clock), with the
    /// store's `book`.
    pub(crate) fn replayed(mut self, book: &ReplayBook, now: i64) -> Batch {
        if let Some(first) = self.calls.first() {
            let replay = Replay::new(&book.lock(), first.clone(), now);
            self.replaying = Some(Replaying { book: book.clone(), now, at: 0, replay });
        }
        self
    }

    /// The calls still in flight.
    fn pending(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.calls.len()).filter(|&i| self.outcomes[i].is_none())
    }

    fn exchange(&self, i: usize) -> Exchange<'_> {
        Exchange::at(&self.calls[i], RULES, self.attempts[i])
    }

    /// The request for every call still in flight (their current attempts' commands, in
    /// order): `/` for one command, else `/pipeline`.
    pub fn request(&self) -> Request {
        if let Some(r) = &self.replaying {
            let mut body = String::from("[");
            for (i, command) in r.replay.commands().iter().enumerate() {
                if i > 0 {
                    body.push(',');
                }
                let args: Vec<String> = command.iter().map(hex).collect();
                write_command(&mut body, &args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
            }
            body.push(']');
            return Request { path: PATH_PIPELINE, body, hex: true };
        }
        // Written straight into one string (no JSON tree): this runs once per decision.
        let mut body = String::with_capacity(256);
        let mut n = 0;
        for i in self.pending() {
            self.exchange(i).commands(|args| {
                body.push(if n == 0 { '[' } else { ',' });
                write_command(&mut body, args);
                n += 1;
            });
        }
        if n == 1 {
            body.remove(0);
            return Request { path: PATH_ONE, body, hex: false };
        }
        body.push(']');
        Request { path: PATH_PIPELINE, body, hex: false }
    }

    /// Feeds the reply to [`Batch::request`]: its HTTP status and body.
    pub fn feed(&mut self, status: u16, body: &[u8]) -> Next {
        if self.replaying.is_some() {
            return self.feed_replay(status, body);
        }
        let wanted: usize = self.pending().map(|i| self.exchange(i).replies()).sum();
        let frames = match frames(status, body, wanted, wanted != 1) {
            Ok(frames) => frames,
            Err(e) => return self.fail(e),
        };
        let mut frames = frames.into_iter();
        // The calls still in flight, in order: a call's outcome is set only at its own turn.
        for i in 0..self.calls.len() {
            if self.outcomes[i].is_some() {
                continue;
            }
            let mut exchange = Exchange::at(&self.calls[i], RULES, self.attempts[i]);
            let n = exchange.replies();
            for frame in frames.by_ref().take(n) {
                match exchange.feed(&frame) {
                    Step::More => {}
                    // No pause or reroute on REST: `Again` is the fallback after a miss.
                    Step::Again { .. } => {
                        self.attempts[i] = exchange.attempt();
                        break;
                    }
                    Step::Done(outcome) => {
                        self.outcomes[i] = Some(outcome);
                        break;
                    }
                }
            }
        }
        self.next()
    }

    fn feed_replay(&mut self, status: u16, body: &[u8]) -> Next {
        let Some(r) = self.replaying.as_mut() else { return self.next() };
        let items = match Json::parse(body).filter(|_| status == 200) {
            Some(Json::Array(items)) => Some(items),
            _ => None,
        };
        let values: Option<Vec<Value>> = items.and_then(|items| {
            items
                .iter()
                .map(|item| match (item.get("result"), item.get("error")) {
                    (Some(v), None) => json_value(v),
                    (None, Some(Json::String(e))) => Some(Value::Error(e.clone())),
                    _ => None,
                })
                .collect()
        });
        let Some(values) = values else {
            let text = String::from_utf8_lossy(body);
            return self.fail(Error::store(format!("replay: HTTP {status}: {}", excerpt(&text))));
        };
        let Some(outcome) = r.replay.feed(&mut r.book.lock(), &values) else { return Next::Send };
        self.outcomes[r.at] = Some(outcome);
        r.at += 1;
        match self.calls.get(r.at) {
            Some(call) => {
                r.replay = Replay::new(&r.book.lock(), call.clone(), r.now);
                Next::Send
            }
            None => Next::Done,
        }
    }

    /// Ends every call still in flight with `error` (the request failed or timed out: nothing is
    /// sent again, it may have run).
    pub fn fail(&mut self, error: Error) -> Next {
        for o in self.outcomes.iter_mut().filter(|o| o.is_none()) {
            *o = Some(Err(error.clone()));
        }
        Next::Done
    }

    fn next(&self) -> Next {
        if self.pending().next().is_some() { Next::Send } else { Next::Done }
    }

    /// Each call's outcome, in order (a call still in flight: `store_unavailable`).
    pub(crate) fn outcomes(self) -> impl Iterator<Item = Result<Outcome>> {
        self.outcomes.into_iter().map(|o| o.unwrap_or_else(|| Err(Error::store("the REST call was not finished"))))
    }
}

/// The request that deletes `full_key` (a reset): `["DEL", key]`; its reply goes to
/// [`finish_del`].
pub fn del(full_key: &str) -> Request {
    Request { path: PATH_ONE, body: command_json(&[b"DEL", full_key.as_bytes()]), hex: false }
}

/// The outcome of [`del`]'s reply: any integer result is success, anything else
/// `store_unavailable`.
pub fn finish_del(status: u16, body: &[u8]) -> Result<()> {
    let frame = frames(status, body, 1, false)?.pop().unwrap_or_default();
    if resp::int(&frame).is_some() {
        return Ok(());
    }
    Err(Error::store(format!("DEL failed: {}", excerpt(&String::from_utf8_lossy(&frame)))))
}

/// A command as a JSON array of strings (an argument that is not UTF-8 is written lossily:
/// the scripts' own arguments are ASCII, and keys are the caller's strings).
pub fn command_json(args: &[&[u8]]) -> String {
    let mut out = String::with_capacity(128);
    write_command(&mut out, args);
    out
}

/// Appends [`command_json`]'s array to `out`. Once per decision: an argument with nothing to
/// escape (the command's name, the SHA1, the numbers, most keys) is copied whole, compiled for
/// speed in the WebAssembly build (which is compiled for size: the escaper's byte-at-a-time loop
/// was the largest piece of a REST decision's time in the module, a `--cpu-prof` of `check`).
#[cfg_attr(target_arch = "wasm32", optimize(speed))]
fn write_command(out: &mut String, args: &[&[u8]]) {
    out.push('[');
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match std::str::from_utf8(a) {
            Ok(plain) if a.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\') => {
                out.push('"');
                out.push_str(plain);
                out.push('"');
            }
            _ => crate::json_text::write_string(out, &String::from_utf8_lossy(a)),
        }
    }
    out.push(']');
}

/// The RESP frames of a reply to `wanted` commands (`pipeline`: sent to [`PATH_PIPELINE`]).
fn frames(status: u16, body: &[u8], wanted: usize, pipeline: bool) -> Result<Vec<Vec<u8>>> {
    // The body as text only for an error's words (not on a reply's way).
    let text = || String::from_utf8_lossy(body);
    let json = Json::parse(body);
    let error_of =
        |j: &Option<Json>| j.as_ref().and_then(|j| j.get("error")).and_then(Json::as_str).map(str::to_string);
    match status {
        200 => {}
        401 | 403 => {
            let why = error_of(&json).unwrap_or_else(|| excerpt(&text()));
            return Err(Error::store(format!("the REST server refused the token (HTTP {status}): {why}")));
        }
        // One command's error reply (`NOSCRIPT`, a script error): fed to the engine.
        400 if !pipeline => {
            if let Some(e) = error_of(&json) {
                let mut frame = Vec::new();
                resp::write_error(&mut frame, &e);
                return Ok(vec![frame]);
            }
            return Err(unreadable(status, &text()));
        }
        _ => {
            let why = error_of(&json).unwrap_or_else(|| excerpt(&text()));
            return Err(Error::store(format!("the REST server answered HTTP {status}: {why}")));
        }
    }
    let Some(json) = json else { return Err(unreadable(status, &text())) };
    let items: &[Json] = match (&json, pipeline) {
        (Json::Array(items), true) => items,
        (item, false) => std::slice::from_ref(item),
        _ => return Err(unreadable(status, &text())),
    };
    if items.len() != wanted {
        return Err(Error::store(format!("the REST server answered {} replies to {wanted} commands", items.len())));
    }
    // Each frame sized for its reply at once (a RESP frame is about as long as its JSON).
    let room = body.len() / wanted.max(1) + 16;
    items.iter().map(|item| item_frame(item, room).ok_or_else(|| unreadable(status, &text()))).collect()
}

/// `{"result": R}` or `{"error": E}` as the RESP frame Redis would have sent (`room`: the
/// bytes to reserve for it).
fn item_frame(item: &Json, room: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(room);
    match (item.get("result"), item.get("error")) {
        (Some(r), None) => write_resp(&mut out, r)?,
        (None, Some(Json::String(e))) => resp::write_error(&mut out, e),
        _ => return None,
    }
    Some(out)
}

/// Writes a JSON Redis reply as RESP: an integer, a string (bulk), `null` (nil), an array, or
/// `{"error": E}` inside an array (a transaction's failed command). Anything else (a fraction,
/// a boolean, another object) is no Redis reply.
fn write_resp(out: &mut Vec<u8>, v: &Json) -> Option<()> {
    match v {
        Json::Number(n) => resp::write_int(out, (*n)?),
        Json::String(s) => resp::bulk(out, s.as_bytes()),
        Json::Null => out.extend_from_slice(b"$-1\r\n"),
        Json::Array(items) => {
            resp::write_array(out, items.len());
            for item in items {
                write_resp(out, item)?;
            }
        }
        Json::Object(o) if o.len() == 1 => resp::write_error(out, v.get("error")?.as_str()?),
        _ => return None,
    }
    Some(())
}

/// A reply in [`HEX_ENCODING`] as a [`Value`] (an error inside an array, a transaction's
/// failed command, as [`Value::Error`]).
fn json_value(v: &Json) -> Option<Value> {
    Some(match v {
        Json::Number(n) => Value::Int((*n)?),
        Json::String(s) => Value::BulkString(unhex(s)?),
        Json::Null => Value::Nil,
        Json::Array(items) => Value::Array(items.iter().map(json_value).collect::<Option<_>>()?),
        Json::Object(o) if o.len() == 1 => Value::Error(v.get("error")?.as_str()?.to_string()),
        _ => return None,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn excerpt(text: &str) -> String {
    let t: String = text.chars().take(120).collect();
    format!("{t:?}")
}

fn unreadable(status: u16, text: &str) -> Error {
    Error::store(format!("unreadable reply from the REST server (HTTP {status}): {}", excerpt(text)))
}

#[cfg(test)]
mod tests;
