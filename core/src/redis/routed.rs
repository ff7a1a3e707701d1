//! A binding's own transport on a Redis Cluster: which master a prepared call goes to, and
//! what each reply asks for next.
//!
//! Why: on a cluster the store's own calls hop from an event loop to a Tokio thread and back,
//! two thread switches that cost more than the round trip (docs/bench-bindings.md, "Cluster").
//! A binding that brings its own sockets ([`super::transport`]) keeps one per master and asks
//! here where each call goes. Every routing rule stays the store's (`cluster/`): the
//! slot (CRC16, hash tags), the slot map read from `CLUSTER SLOTS`, and what a reply means.
//! The transport follows [`Routes::follow`] and nothing else:
//!
//! 1. Send [`super::transport::PreparedCall::write`] with a fresh [`Hop`] to [`Routes::node`] of
//!    the call's [`super::transport::PreparedCall::slot`].
//! 2. Hand every reply frame to [`Routes::follow`]. [`Follow::Reply`]: the frame is the call's
//!    (finish it). [`Follow::Again`]: the node refused the call before running it (`MOVED`,
//!    `ASK`, `TRYAGAIN`, `NOSCRIPT` / function not found): after `pause_ms`, send
//!    [`super::transport::PreparedCall::write`] of `hop` to `node`, whose
//!    [`super::transport::replies`] replies end with the call's. [`Follow::Fail`]: finish it with that error.
//!    A call takes at most the engine's `MAX_ATTEMPTS` attempts (as on the store's own paths),
//!    all within the one `timeout_ms` the transport keeps from the call's start.
//! 3. A connection that could not be made (nothing was written on it): ask
//!    [`Routes::reroute`]; a node number means the map now names another master for the slot
//!    (a failover): send there. Otherwise the call fails with the connection's error.
//! 4. A connection that failed, or a call that timed out, after the call was written: the call
//!    fails (`store_unavailable`) and is never sent again (it may have counted); tell
//!    [`Routes::lost`], which reads the map again in the background.

use std::sync::Arc;

use super::cluster::Router;
use super::connect::Endpoint;
use super::engine;
use crate::error::{Error, Result};

/// Where a call is in its route: attempts so far, and how the next is sent (`ASKING` first,
/// the fallback). A binding keeps it as a number ([`Hop::bits`], [`Hop::from_bits`]; a fresh
/// hop is 0).
pub use super::engine::Attempt as Hop;

/// What a reply asks of the transport.
#[derive(Debug)]
pub enum Follow {
    /// The frame is the call's reply: finish the call with it.
    Reply,
    /// Send the call again to `node` after `pause_ms`, as `hop` says.
    Again {
        /// The node to send to.
        node: u32,
        /// How to send ([`super::transport::PreparedCall::write`]).
        hop: Hop,
        /// How long to wait first (`TRYAGAIN`), ms.
        pause_ms: u64,
    },
    /// The call ends with this error (finish it with the error, as a transport error).
    Fail(Error),
}

/// A cluster store's routes ([`super::RedisStore::routes`]).
#[derive(Clone)]
pub struct Routes {
    router: Arc<Router>,
}

impl Routes {
    pub(super) fn new(router: Arc<Router>) -> Routes {
        Routes { router }
    }

    /// The number of the master serving `slot` now; an error (`store_unavailable`) when none
    /// does (a failover in progress: the map is read again in the background).
    pub fn node(&self, slot: u16) -> Result<u32> {
        self.router.owner(slot).map(|n| n.id)
    }

    /// Where node `node` is and how to log in there (the store's credentials; TLS as the store).
    pub fn endpoint(&self, node: u32) -> Option<Endpoint> {
        self.router.by_id(node).map(|n| n.endpoint.clone())
    }

    /// What the reply `frame`, read from `node` for an attempt sent as `hop` says, does next
    /// (the engine's rules, `core/src/redis/engine/`): a `MOVED` is learnt (and the map read
    /// again in the background), and an error saying the map is stale has it read again, as on
    /// the store's own paths.
    pub fn follow(&self, node: u32, hop: Hop, frame: &[u8]) -> Follow {
        let Some(from) = self.router.by_id(node) else { return Follow::Reply };
        // The scripting mode and durability do not change what a reply asks for.
        let rules = engine::Rules { cluster: true, ..super::transport::rules(false) };
        match engine::redirect(rules, hop, frame, "a call") {
            None => {
                if engine::says_map_stale(frame) {
                    self.router.refresh_soon();
                }
                Follow::Reply
            }
            Some(Err(e)) => Follow::Fail(e),
            Some(Ok((hop, to, pause))) => {
                Follow::Again { node: self.router.target(&from, to).id, hop, pause_ms: pause.as_millis() as u64 }
            }
        }
    }

    /// After a connection to `node` could not be made for a call sent as `hop` (nothing was
    /// written): reads the map again now (unless it was read within the refresh gap) and names
    /// the slot's master if another node serves it (a failover not seen yet), with the hop to
    /// send there. `None`: the call fails with the connection's error. Only a node the map chose
    /// is rerouted from (not a redirect's target), as on the store's own path.
    pub async fn reroute(&self, slot: u16, node: u32, hop: Hop) -> Option<(u32, Hop)> {
        let (Some(next), Some(from)) = (hop.rerouted(), self.router.by_id(node)) else {
            self.router.refresh_soon();
            return None;
        };
        if self.router.moved_after_refresh(slot, &from).await {
            return Some((self.router.owner(slot).ok()?.id, next));
        }
        self.router.refresh_soon();
        None
    }

    /// A connection failed, or a call timed out, after a call was written: reads the map again
    /// in the background. (The call itself is never sent again.)
    pub fn lost(&self) {
        self.router.refresh_soon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::transport::replies;

    #[test]
    fn an_attempts_replies_count_asking_and_the_fallback() {
        let h = |asking: bool, fallback: bool| Hop::from_bits(1 | u32::from(asking) << 8 | u32::from(fallback) << 9);
        assert_eq!(replies(false, h(false, false)), 1);
        assert_eq!(replies(true, h(true, false)), 2);
        assert_eq!(replies(false, h(true, true)), 2); // ASKING, EVAL
        assert_eq!(replies(true, h(true, true)), 3); // ASKING, FUNCTION LOAD, FCALL
    }

    #[test]
    fn a_call_takes_at_most_max_attempts_and_reroutes_only_from_the_maps_choice() {
        // The first attempt is 0; each reroute is one more, MAX_ATTEMPTS in all.
        let mut hop = Hop::default();
        for _ in 1..engine::MAX_ATTEMPTS {
            hop = hop.rerouted().expect("within MAX_ATTEMPTS");
        }
        assert_eq!(hop.rerouted(), None);
        assert_eq!(Hop::from_bits(1 << 10).rerouted(), None, "a redirect's target is not rerouted from");
    }
}
