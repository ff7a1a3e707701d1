//! The router's half of a binding's own transport on a cluster ([`crate::redis::routed`]): the
//! master of a slot, by node number; a node's address; what a reply says to do next; the map
//! read again after a connection could not be made. The rules are the engine's ([`engine`]), so that a
//! call routed by an event loop's sockets meets the same redirects, hops and refreshes.

use std::sync::Arc;
use std::time::Duration;

use super::{Node, Router};
use crate::error::Result;
use crate::redis::engine::{self, Attempt, To};

impl Router {
    /// The number of the master serving `slot`; none (a failover left it uncovered) is an
    /// error, and the map is read again in the background.
    pub(crate) fn master_of(self: &Arc<Self>, slot: u16) -> Result<u32> {
        self.owner(slot).map(|n| n.id)
    }

    fn by_id(&self, id: u32) -> Option<Arc<Node>> {
        self.nodes.lock().values().find(|n| n.id == id).cloned()
    }

    /// Where node `id` is, with the store's scheme and credentials (as the router connects).
    pub(crate) fn node_info(&self, id: u32) -> Option<crate::redis::transport::Endpoint> {
        self.by_id(id).map(|n| n.endpoint.clone())
    }

    /// What `reply`, read from node `node` for a call sent as `attempt`, asks for
    /// ([`engine::redirect`]): `None` when it is the call's reply; else the node, attempt and
    /// pause of the next. A `MOVED` is learnt (and the map read again in the background), and an
    /// error saying the map is stale has it read again, as on the store's own paths.
    pub(crate) fn wire(
        self: &Arc<Self>,
        node: u32,
        attempt: Attempt,
        reply: &[u8],
    ) -> Result<Option<(u32, Attempt, Duration)>> {
        let Some(from) = self.by_id(node) else { return Ok(None) };
        // The scripting mode and durability do not change what a reply asks for.
        let rules = crate::redis::transport::rules(false);
        let rules = engine::Rules { cluster: true, ..rules };
        let (next, to, pause) = match engine::redirect(rules, attempt, reply, "a call") {
            None => {
                if engine::says_map_stale(reply) {
                    self.refresh_soon();
                }
                return Ok(None);
            }
            Some(next) => next?,
        };
        Ok(Some((self.target(&from, to)?.id, next, pause)))
    }

    /// The node the engine's [`To`] names, for a reply from `from`: a `MOVED` is learnt (and
    /// the map read again in the background); an empty host is `from`'s.
    pub(crate) fn target(self: &Arc<Self>, from: &Arc<Node>, to: To) -> Result<Arc<Node>> {
        let addr = |host: String, port: u16| (if host.is_empty() { from.addr.0.clone() } else { host }, port);
        Ok(match to {
            To::Same | To::Reroute => from.clone(),
            To::Moved { slot, host, port } => {
                let target = self.node(&addr(host, port));
                self.learn(slot, target.clone());
                self.refresh_soon();
                target
            }
            To::Ask { host, port } => self.node(&addr(host, port)),
        })
    }

    /// After a connection to node `node`, the map's master of `slot`, could not be made (so
    /// nothing was sent): reads the map again now (unless it was read within the refresh gap)
    /// and names the slot's master if it is another node now (a failover not seen yet).
    pub(crate) async fn reroute(self: &Arc<Self>, slot: u16, node: u32) -> Option<u32> {
        let from = self.by_id(node)?;
        if self.moved_after_refresh(slot, &from).await {
            return self.map.read().get(slot).map(|n| n.id);
        }
        self.refresh_soon();
        None
    }

    /// A connection failed after a call was written on it: the call is not sent again, and the
    /// map is read again in the background (the node may be gone).
    pub(crate) fn lost(self: &Arc<Self>) {
        self.refresh_soon();
    }
}
