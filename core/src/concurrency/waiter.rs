//! A waiter of `acquire`: a slot the limiter fills with a grant, awaited from a thread or a task.
//!
//! The limiter hands a freed permit straight to a waiter (the in-flight count never drops in
//! between, so no newcomer can take it first) while it holds its lock; a waiter whose deadline
//! passes takes the same lock to leave the queue, so a waiter is either still queued or granted,
//! never both and never lost.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::lock;

#[derive(Default)]
struct SlotState {
    /// The grant's time on the limiter's clock (the permit's round trip starts there).
    granted_at: Option<u64>,
    waker: Option<Waker>,
}

/// One waiter's slot.
#[derive(Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    ready: Condvar,
}

impl Slot {
    /// Fills the slot (called under the limiter's lock) and wakes its waiter.
    pub(crate) fn grant(&self, now_ns: u64) {
        let waker = {
            let mut s = lock(&self.state);
            s.granted_at = Some(now_ns);
            s.waker.take()
        };
        self.ready.notify_one();
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub(crate) fn granted_at(&self) -> Option<u64> {
        lock(&self.state).granted_at
    }

    /// Blocks until granted or `deadline`; the grant time if granted.
    pub(crate) fn wait_until(&self, deadline: Instant) -> Option<u64> {
        let mut s = lock(&self.state);
        loop {
            if let Some(at) = s.granted_at {
                return Some(at);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            s = self.ready.wait_timeout(s, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// A future that completes with the grant time.
    pub(crate) fn granted(self: &Arc<Self>) -> Granted {
        Granted { slot: self.clone() }
    }
}

/// Completes when the slot is granted.
pub(crate) struct Granted {
    slot: Arc<Slot>,
}

impl Future for Granted {
    type Output = u64;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        let mut s = lock(&self.slot.state);
        match s.granted_at {
            Some(at) => Poll::Ready(at),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A queued waiter.
pub(crate) struct Waiter {
    pub slot: Arc<Slot>,
    pub partition: Option<usize>,
}
