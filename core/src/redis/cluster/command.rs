//! The router's commands that are not script calls: `reset`'s `DEL`, the function library's
//! `FUNCTION LOAD REPLACE` on every master, deterministic replay's rounds, the replayed keys'
//! `DEL` and raw commands. Each goes on the store's connection to a master ([`Router::mux`]),
//! with the routing rules of a script call:
//!
//! - **Redirects**: a `MOVED`, `ASK` or `TRYAGAIN` is answered before the command runs, so the
//!   command goes again where it says ([`engine::redirect`]: `MOVED` learnt, `ASKING` first
//!   after `ASK`, a pause after `TRYAGAIN`), at most [`engine::MAX_ATTEMPTS`] times in all.
//!   A round of several commands (replay's) follows a `MOVED` only, and only when its last reply
//!   is an error: the keys of a round lie in one slot, so the node refused every command of it
//!   (a transaction answers `EXECABORT`), and what came before the transaction is idempotent
//!   (`DEL` of expired keys, `DUMP`, `RESTORE ... REPLACE`). `ASKING` covers one command only,
//!   so a round that meets `ASK` or `TRYAGAIN` gets those replies back (replay fails it).
//! - **At most once**: a connection that fails after the command may have been written fails
//!   the command; the connection is retired, the map read again, and nothing is sent again. A
//!   connection that could not be made (nothing was sent) has the map read at once, and the
//!   command goes to the slot's new master if a failover gave it one.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use std::collections::BTreeMap;

use super::{Node, Router};
use crate::error::{Error, Result};
use crate::redis::engine::value::{Args, Value};
use crate::redis::engine::{self, Attempt, Invoke, Rules, To, resp};
use crate::redis::wire::Lost;

/// Only the cluster rules matter for a reply that is not a script call's.
const RULES: Rules = Rules { invoke: Invoke::Scripts, durable: None, cluster: true };

impl Router {
    /// `round` (one command, or several whose keys all lie in `slot`) on the master of `slot`,
    /// following redirects as the module docs say: each command's reply frame, in order.
    pub(crate) async fn command(self: &Arc<Self>, slot: u16, round: &[Args]) -> Result<Vec<Vec<u8>>> {
        // A command has no fallback: a `NOSCRIPT` it gets back is its reply, not a miss to load.
        let mut attempt = Attempt::default().with_fallback();
        let mut to = None;
        loop {
            let node = self.next_node(&mut to, slot)?;
            let frames = match self.send(&node, attempt.asking(), round).await {
                Ok(frames) => frames,
                Err(Lost::Sent(e)) => return Err(e),
                // Nothing was sent: the map, read again now, may name the slot's new master.
                Err(Lost::Unsent(e)) => match attempt.rerouted() {
                    Some(next) if self.moved_after_refresh(slot, &node).await => {
                        attempt = next.with_fallback();
                        continue;
                    }
                    _ => {
                        self.refresh_soon();
                        return Err(e);
                    }
                },
            };
            let first = &frames[0];
            if engine::says_map_stale(first) {
                self.refresh_soon();
            }
            let whole_round_refused = frames.len() == 1 || engine::resp::error(&frames[frames.len() - 1]).is_some();
            match engine::redirect(Rules { cluster: self.is_routed(), ..RULES }, attempt, first, "a command") {
                Some(Ok((next, target, pause))) if whole_round_refused => {
                    if round.len() > 1 && !matches!(target, To::Moved { .. }) {
                        return Ok(frames);
                    }
                    self.pause(pause).await?;
                    attempt = next;
                    to = Some(self.target(&node, target));
                }
                Some(Err(e)) => return Err(e),
                _ => return Ok(frames),
            }
        }
    }

    /// Sends `round` to `node` on the store's connection (with `ASKING` first when `asking`):
    /// one reply frame per command of `round`, or how it failed.
    async fn send(
        self: &Arc<Self>,
        node: &Arc<Node>,
        asking: bool,
        round: &[Args],
    ) -> std::result::Result<Vec<Vec<u8>>, Lost<Error>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Lost::Sent(engine::closed()));
        }
        let taken = self.mux(node).await.map_err(Lost::Unsent)?;
        let frames = round.len() + usize::from(asking);
        let sent = taken
            .conn
            .request(frames, |out| {
                if asking {
                    resp::write_command(out, [&b"ASKING"[..]].into_iter());
                }
                round.iter().for_each(|c| resp::write_command(out, c.iter()));
            })
            .await;
        let replies = match sent {
            Ok(bytes) => Some(resp::frames(&bytes).map(<[u8]>::to_vec).collect::<Vec<_>>())
                .filter(|replies| replies.len() == frames)
                .ok_or_else(|| "a reply that is not whole RESP frames".to_string()),
            Err(e) => Err(e.to_string()),
        };
        match replies {
            Ok(mut replies) => Ok(replies.split_off(usize::from(asking))),
            // The command may have run: never sent again.
            Err(cause) => {
                taken.retire();
                self.refresh_soon();
                Err(Lost::Sent(Error::store(format!("{}: {cause}", node.name()))))
            }
        }
    }
}

/// The store's other commands, as the engine's values (server errors as [`Value::Error`]).
impl Router {
    /// `round` (commands whose keys all lie in `key`'s slot), pipelined, on the slot's master.
    pub(crate) async fn round(self: &Arc<Self>, key: &[u8], round: &[Args]) -> Result<Vec<Value>> {
        values(self.command(self.slot_of(key), round).await?)
    }

    /// One command, on the master of `key`'s slot.
    pub(crate) async fn keyed(self: &Arc<Self>, key: &[u8], cmd: &Args) -> Result<Value> {
        let mut replies = self.round(key, std::slice::from_ref(cmd)).await?;
        replies.pop().ok_or_else(|| Error::store("no reply"))
    }

    /// A raw command (tests and tools): to the master of its first argument's slot (the key of
    /// most keyed commands; a keyless command reaches one master).
    pub(crate) async fn raw(self: &Arc<Self>, cmd: &Args) -> Result<Value> {
        self.keyed(cmd.iter().nth(1).unwrap_or_default(), cmd).await
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
    /// names, one after the other: the first error a master answered, else the first reply.
    pub(crate) async fn everywhere(self: &Arc<Self>, cmd: &Args) -> Result<Value> {
        let masters = self.map.read().masters.clone();
        let mut replies = Vec::with_capacity(masters.len());
        for node in masters {
            replies
                .extend(values(self.send(&node, false, std::slice::from_ref(cmd)).await.map_err(Lost::into_inner)?)?);
        }
        let error = replies.iter().position(|v| matches!(v, Value::Error(_)));
        replies.into_iter().nth(error.unwrap_or(0)).ok_or_else(|| Error::store("the cluster has no master"))
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
