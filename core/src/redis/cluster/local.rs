//! A bound runtime's own connection to each master (see "On the caller's runtime" in the
//! parent module): where it is kept, how it is made in the background on that runtime, and how
//! it goes (retired after a failure or an abandoned call, dropped with its runtime or the node).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::runtime::{Handle, Id};

use super::{Node, Router};
use crate::redis::held::{Held, Taken};

/// A bound runtime's own connection to one node.
pub(super) struct Local {
    runtime: Id,
    /// The connection, empty while connecting and after it failed or a call on it was
    /// abandoned: [`crate::redis::pipelined::Pipelined::open`]'s, as one node's bound connection is (the store's own, a
    /// decision reply read where it lies).
    conn: Held,
    /// A connect is under way, or its task never finished: a runtime without IO or timers
    /// panics it there (once per node), and that runtime then keeps the store's connection.
    connecting: bool,
}

impl Node {
    /// The runtime `rt`'s own connection to this node, if it is up.
    pub(super) fn local(&self, rt: Id) -> Option<Taken> {
        self.local.read().iter().find(|l| l.runtime == rt).and_then(|l| l.conn.take())
    }
}

impl Router {
    /// Connects the runtime of `handle` (bound to the store) to `node` in the background, on
    /// that runtime, unless its connection is up or connecting. The task holds no strong
    /// reference: a runtime that never runs it keeps nothing alive.
    pub(super) fn connect_local(self: &Arc<Self>, node: &Arc<Node>, handle: &Handle) {
        let rt = handle.id();
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        {
            let mut local = node.local.write();
            match local.iter_mut().find(|l| l.runtime == rt) {
                Some(l) if l.conn.is_up() || l.connecting => return,
                Some(l) => l.connecting = true,
                None => local.push(Local { runtime: rt, conn: Held::default(), connecting: true }),
            }
        }
        let (me, n) = (Arc::downgrade(self), Arc::downgrade(node));
        let timeout = self.timeout;
        drop(handle.spawn(async move {
            // Held only while the task runs (and connects).
            let Some(node) = n.upgrade() else { return };
            let conn = node.open(timeout).await.map_err(drop);
            drop(node);
            let (Some(me), Some(n)) = (me.upgrade(), n.upgrade()) else { return };
            let mut local = n.local.write();
            if let Some(l) = local.iter_mut().find(|l| l.runtime == rt) {
                l.connecting = false;
                if let Ok(conn) = conn
                    && !me.closed.load(Ordering::Acquire)
                {
                    l.conn.hold(conn);
                }
            }
        }));
    }

    /// A runtime bound to one node's store connects to it now, in the background (on a
    /// cluster, as its calls first reach each master).
    pub(crate) fn bind_local(self: &Arc<Self>, handle: &Handle) {
        if self.is_cluster() {
            return;
        }
        let node = self.map.read().masters.first().cloned();
        if let Some(node) = node {
            self.connect_local(&node, handle);
        }
    }

    /// How many nodes the runtime `rt` has its own connection to, up now.
    pub(crate) fn local_connections(&self, rt: Id) -> usize {
        self.nodes.lock().values().filter(|n| n.local(rt).is_some()).count()
    }

    /// Forgets the runtime `rt` (it shut down): its connections go with its entries.
    pub(crate) fn unbind(&self, rt: Id) {
        for n in self.nodes.lock().values() {
            n.local.write().retain(|l| l.runtime != rt);
        }
    }
}
