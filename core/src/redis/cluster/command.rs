//! The router's commands that are not script calls: `reset`'s `DEL`, the function library's
//! `FUNCTION LOAD REPLACE` on every master, deterministic replay's rounds, the replayed keys'
//! `DEL` and raw commands. A round of them is an exchange ([`Round`]) that [`Router::run`]
//! drives as it drives a script call, on the store's connection to the master of its slot:
//!
//! - **Redirects**: a `MOVED`, `ASK` or `TRYAGAIN` is answered before the command runs, so the
//!   command goes again where it says ([`engine::redirect`]: `MOVED` learnt, `ASKING` first
//!   after `ASK`, a pause after `TRYAGAIN`), at most [`engine::MAX_ATTEMPTS`] times in all.
//!   A round of several commands (replay's) goes again only when its last reply is an error
//!   (its transaction answered `EXECABORT`, or `EXEC` itself was redirected: nothing in it ran),
//!   where its first redirect says: what came before the transaction is idempotent (`DEL` of
//!   expired keys, `DUMP`, `RESTORE ... REPLACE`), so running it again is harmless. That first
//!   redirect need not be the first reply: on a migrating slot's source, a `DEL` of an expired
//!   key that was still there runs, and the rest of the round, its key gone, answers `ASK`.
//!   `ASKING` covers the one command after it, but a transaction keeps it from `MULTI` to
//!   `EXEC`: after `ASK`, the round sends `ASKING` before each of its commands outside a
//!   transaction and before each `MULTI` ([`Round::askings`]).
//! - **At most once**: as a script call's ([`Router::run`]). A command has no fallback: a
//!   `NOSCRIPT` it gets back is its reply, not a miss to load.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Router;
use crate::error::{Error, Result};
use crate::redis::engine::value::{Args, Value};
use crate::redis::engine::{self, Attempt, Driven, Invoke, Rules, Step, To, resp};

/// A round of commands (one, or several whose keys all lie in one slot) as the engine's
/// exchange: its reply frames, in order, once no redirect asks for another attempt.
struct Round<'a> {
    commands: &'a [Args],
    rules: Rules,
    attempt: Attempt,
    /// The current attempt's reply frames so far (`ASKING`'s among them).
    frames: Vec<Vec<u8>>,
    map_stale: bool,
}

impl Round<'_> {
    /// For each command, in order, whether the current attempt sends `ASKING` before it: after
    /// `ASK`, before each command outside a transaction and before its `MULTI`, never between
    /// `MULTI` and `EXEC` (the server would queue it, and `EXEC` would answer it too).
    fn askings(&self) -> impl Iterator<Item = bool> + '_ {
        let asking = self.attempt.asking();
        let mut in_multi = false;
        self.commands.iter().map(move |c| {
            let before = asking && !in_multi;
            let name = c.iter().next().unwrap_or_default();
            if name.eq_ignore_ascii_case(b"MULTI") {
                in_multi = true;
            } else if name.eq_ignore_ascii_case(b"EXEC") || name.eq_ignore_ascii_case(b"DISCARD") {
                in_multi = false;
            }
            before
        })
    }
}

impl Driven for Round<'_> {
    type Out = Vec<Vec<u8>>;

    fn replies(&self) -> usize {
        self.askings().filter(|&a| a).count() + self.commands.len()
    }

    fn write(&self, out: &mut Vec<u8>) {
        for (c, asking) in self.commands.iter().zip(self.askings()) {
            if asking {
                resp::write_command(out, [&b"ASKING"[..]].into_iter());
            }
            resp::write_command(out, c.iter());
        }
    }

    fn feed(&mut self, frame: &[u8]) -> Step<Vec<Vec<u8>>> {
        self.frames.push(frame.to_vec());
        if self.frames.len() < self.replies() {
            return Step::More;
        }
        // The commands' own replies, `ASKING`'s `OK`s dropped.
        let mut all = std::mem::take(&mut self.frames).into_iter();
        let mut frames = Vec::with_capacity(self.commands.len());
        for asking in self.askings() {
            if asking {
                all.next();
            }
            frames.extend(all.next());
        }
        let Some(last) = frames.last() else { return Step::Done(Ok(frames)) };
        self.map_stale = engine::says_map_stale(&frames[0]);
        // One command refused, or a round whose last reply is an error (see the module docs):
        // its first redirect, wherever it is, says where it goes again.
        if frames.len() > 1 && resp::error(last).is_none() {
            return Step::Done(Ok(frames));
        }
        let redirect = frames.iter().find_map(|f| engine::redirect(self.rules, self.attempt, f, "a command"));
        match redirect {
            Some(Ok((next, to, pause))) => {
                self.attempt = next;
                Step::Again { to, pause }
            }
            Some(Err(e)) => Step::Done(Err(e)),
            None => Step::Done(Ok(frames)),
        }
    }

    fn unsent(&mut self, cause: Error) -> Step<Vec<Vec<u8>>> {
        match self.attempt.rerouted().filter(|_| self.rules.cluster) {
            Some(next) => {
                self.attempt = next;
                Step::Again { to: To::Reroute, pause: std::time::Duration::ZERO }
            }
            None => Step::Done(Err(cause)),
        }
    }

    fn map_stale(&self) -> bool {
        self.map_stale
    }
}

/// The store's other commands, as the engine's values (server errors as [`Value::Error`]).
impl Router {
    /// `round` (commands whose keys all lie in `key`'s slot), pipelined, on the slot's master.
    pub(crate) async fn round(self: &Arc<Self>, key: &[u8], commands: &[Args]) -> Result<Vec<Value>> {
        let round = Round {
            commands,
            rules: self.rules(Invoke::Scripts, None),
            attempt: Attempt::default().with_fallback(),
            frames: Vec::new(),
            map_stale: false,
        };
        values(self.run(self.slot_of(key), round, None).await?)
    }

    /// One command, on the master of `key`'s slot.
    pub(crate) async fn keyed(self: &Arc<Self>, key: &[u8], cmd: &Args) -> Result<Value> {
        let mut replies = self.round(key, std::slice::from_ref(cmd)).await?;
        replies.pop().ok_or_else(|| Error::store("no reply"))
    }

    /// A raw command (tests and tools): to the master of its key's slot ([`routing_key`]); a
    /// keyless command reaches one master.
    pub(crate) async fn raw(self: &Arc<Self>, cmd: &Args) -> Result<Value> {
        self.keyed(routing_key(cmd), cmd).await
    }

    /// Deletes `keys`: one `DEL` per slot on a cluster, each on its master; one in all else.
    pub(crate) async fn delete(self: &Arc<Self>, keys: Vec<String>) -> Result<()> {
        let mut by_slot: BTreeMap<u16, Vec<String>> = BTreeMap::new();
        for k in keys {
            by_slot.entry(self.slot_of(k.as_bytes())).or_default().push(k);
        }
        for keys in by_slot.into_values() {
            let mut del = Args::new();
            del.arg("DEL");
            keys.iter().for_each(|k| {
                del.arg(k);
            });
            if let Value::Error(e) = self.keyed(keys[0].as_bytes(), &del).await? {
                return Err(Error::store(e));
            }
        }
        Ok(())
    }

    /// `cmd` (keyless and idempotent: `FUNCTION LOAD REPLACE`) on every master the slot map
    /// names, one after the other, following no redirect: the first error a master answered,
    /// else the first reply.
    pub(crate) async fn everywhere(self: &Arc<Self>, cmd: &Args) -> Result<Value> {
        let masters = self.map.read().masters.clone();
        let mut replies = Vec::with_capacity(masters.len());
        for node in masters {
            let taken = self.mux(&node).await?;
            let frame = taken.conn.frame(cmd).await.map_err(|e| {
                taken.retire();
                self.refresh_soon();
                Error::store(format!("{}: {e}", node.name()))
            })?;
            replies.extend(values(vec![frame])?);
        }
        let error = replies.iter().position(|v| matches!(v, Value::Error(_)));
        replies.into_iter().nth(error.unwrap_or(0)).ok_or_else(|| Error::store("the cluster has no master"))
    }
}

/// The key a raw command routes by: the first key of a script call (`EVAL`, `EVALSHA`, `FCALL`
/// and their `_RO` forms: `verb script numkeys key...`; none when `numkeys` is 0), the key after
/// the subcommand of `OBJECT`, `MEMORY USAGE` and `XINFO`, else the first argument (the key of
/// most keyed commands). A command routed by another argument would still reach its key's master,
/// one `MOVED` later, and have the map read again for nothing.
fn routing_key(cmd: &Args) -> &[u8] {
    let verb = cmd.iter().next().unwrap_or_default().to_ascii_uppercase();
    let arg = |i: usize| cmd.iter().nth(i).unwrap_or_default();
    match verb.as_slice() {
        b"EVAL" | b"EVALSHA" | b"EVAL_RO" | b"EVALSHA_RO" | b"FCALL" | b"FCALL_RO" => {
            let keyed = std::str::from_utf8(arg(2)).ok().and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n > 0);
            if keyed { arg(3) } else { b"" }
        }
        b"OBJECT" | b"MEMORY" | b"XINFO" => arg(2),
        _ => arg(1),
    }
}

/// Reply frames read as the engine's values (server errors as [`Value::Error`]).
fn values(frames: Vec<Vec<u8>>) -> Result<Vec<Value>> {
    frames
        .iter()
        .map(|f| {
            resp::value(f).ok_or_else(|| Error::store(format!("an unreadable reply: {:?}", String::from_utf8_lossy(f))))
        })
        .collect()
}
