//! The router's half of a binding's own transport on a cluster ([`crate::redis::routed`]): the
//! master of a slot, by node number; a node's address; what a reply says to do next; the map
//! read again after a connection could not be made. The rules are [`Router::run`]'s, so that a
//! call routed by an event loop's sockets meets the same redirects, hops and refreshes.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use super::{Node, Router, TRYAGAIN_PAUSE, Verdict, classify};
use crate::error::Result;

/// What a reply frame asks of the transport that read it.
pub(crate) enum Wire {
    /// The reply is the call's (a result, or an error that ends it).
    Reply,
    /// Send the call again to node `node`: with `ASKING` first (`ASK`), as its fallback
    /// (`missing`: the node lacked the script or function), after `pause` (`TRYAGAIN`).
    Again { node: u32, asking: bool, missing: bool, pause: Duration },
}

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
    pub(crate) fn node_info(&self, id: u32) -> Option<redis::ConnectionInfo> {
        self.by_id(id).map(|n| n.client.get_connection_info().clone())
    }

    /// What `reply`, read from node `node` for a call sent with `ASKING` first when `asking`,
    /// asks for: a `MOVED` is learnt (and the map read again in the background), as on the
    /// store's own path.
    pub(crate) fn wire(self: &Arc<Self>, node: u32, asking: bool, reply: &[u8]) -> Result<Wire> {
        // Only an error frame asks for anything (as on the sync path: `super::super::wire::answer`);
        // redis-rs's parser would zero-fill 8 KB to say so about any other.
        let Some(from) = self.by_id(node).filter(|_| reply.first() == Some(&b'-')) else { return Ok(Wire::Reply) };
        let Ok(value @ Value::ServerError(_)) = redis::parse_redis_value(reply) else { return Ok(Wire::Reply) };
        let again = |node: u32, asking, missing, pause| Wire::Again { node, asking, missing, pause };
        Ok(match classify(Ok((value, None)), &from.addr.0) {
            Verdict::Moved(slot, addr) => {
                let target = self.node(&addr)?;
                self.learn(slot, target.clone());
                self.refresh_soon();
                again(target.id, false, false, Duration::ZERO)
            }
            Verdict::Ask(addr) => again(self.node(&addr)?.id, true, false, Duration::ZERO),
            Verdict::TryAgain => again(node, asking, false, TRYAGAIN_PAUSE),
            Verdict::Missing => again(node, asking, true, Duration::ZERO),
            Verdict::Refused(e) => {
                if e.starts_with("CLUSTERDOWN") || e.starts_with("READONLY") || e.starts_with("MASTERDOWN") {
                    self.refresh_soon();
                }
                Wire::Reply
            }
            Verdict::Done(..) | Verdict::Lost(_) => Wire::Reply,
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
