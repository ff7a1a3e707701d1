//! The one way the store keeps an async connection that calls share ([`Held`]): one node's
//! (or the Sentinel master's), each cluster master's, and each bound runtime's own, to one node
//! or to each master. A call takes the connection with its number ([`Taken`]); a call on it
//! that failed at the connection level, or was abandoned before its reply (its timeout fired),
//! retires that connection, and only that one: one made meanwhile by another call stays. Its
//! late reply is then never read as another call's, and the next call makes a new connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::pipelined::Pipelined;

/// A shared connection slot; clones share it. Empty until a connection is held, and after it
/// was retired.
#[derive(Clone, Default)]
pub(crate) struct Held(Arc<Slot>);

#[derive(Default)]
struct Slot {
    conn: parking_lot::RwLock<Option<(Pipelined, u64)>>,
    /// Numbers the connections held, so that a late failure retires only its own.
    made: AtomicU64,
}

/// A connection taken from a [`Held`] for a call, with its number.
#[derive(Clone)]
pub(crate) struct Taken {
    pub(crate) conn: Pipelined,
    id: u64,
    from: Held,
}

impl Held {
    /// The connection held now, if any.
    pub(crate) fn take(&self) -> Option<Taken> {
        let conn = self.0.conn.read();
        conn.as_ref().map(|(conn, id)| Taken { conn: conn.clone(), id: *id, from: self.clone() })
    }

    /// Whether a connection is held now.
    pub(crate) fn is_up(&self) -> bool {
        self.0.conn.read().is_some()
    }

    /// Holds `conn`, unless a connection is held already (made meanwhile by another call: it
    /// stays, and `conn` is dropped); the one held now.
    pub(crate) fn hold(&self, conn: Pipelined) -> Taken {
        let mut held = self.0.conn.write();
        if held.is_none() {
            *held = Some((conn, self.0.made.fetch_add(1, Ordering::Relaxed) + 1));
        }
        let (conn, id) = held.clone().expect("held just now");
        Taken { conn, id, from: self.clone() }
    }

    /// Drops the connection held, if any (the store closed, the node is no longer a master).
    pub(crate) fn clear(&self) {
        *self.0.conn.write() = None;
    }
}

impl Taken {
    /// Drops this connection from its [`Held`], unless another replaced it already.
    pub(crate) fn retire(&self) {
        let mut held = self.from.0.conn.write();
        if held.as_ref().is_some_and(|(_, id)| *id == self.id) {
            *held = None;
        }
    }

    /// A guard that retires this connection when dropped armed: a call on it abandoned while
    /// it waits for its reply (the caller's timeout dropped its future).
    pub(crate) fn guard(&self) -> RetireOnDrop<'_> {
        RetireOnDrop { taken: self, armed: true }
    }
}

/// See [`Taken::guard`].
pub(crate) struct RetireOnDrop<'a> {
    taken: &'a Taken,
    armed: bool,
}

impl RetireOnDrop<'_> {
    /// The call answered (or failed in a way its caller handles): nothing to retire here.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for RetireOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.taken.retire();
        }
    }
}
