//! A waiter of `acquire`: a slot the limiter fills with a grant, awaited from a thread or a task.
//!
//! The limiter hands a freed permit straight to a waiter (the in-flight count never drops in
//! between, so no newcomer can take it first) while it holds its lock; a waiter whose deadline
//! passes takes the same lock to leave the queue, so a waiter is either still queued or granted,
//! never both and never lost. A wait that ends early (a dropped future, a [`Cancel`]) takes that
//! lock too: it leaves the queue, or gives back the permit it was granted meanwhile.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use super::limiter::AdaptiveLimiter;
use super::lock;
use super::outcome::Outcome;

#[derive(Default)]
struct SlotState {
    /// The grant's time on the limiter's clock (the permit's round trip starts there).
    granted_at: Option<u64>,
    waker: Option<Waker>,
    /// A [`Cancel`] fired: a blocking wait returns now.
    cancelled: bool,
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

    /// Ends a blocking wait now ([`Slot::wait_until`] returns).
    fn cancel(&self) {
        lock(&self.state).cancelled = true;
        self.ready.notify_one();
    }

    /// Blocks until granted, `deadline` or a cancel; the grant time if granted.
    pub(crate) fn wait_until(&self, deadline: Instant) -> Option<u64> {
        let mut s = lock(&self.state);
        loop {
            if let Some(at) = s.granted_at {
                return Some(at);
            }
            let now = Instant::now();
            if now >= deadline || s.cancelled {
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

/// An async waiter in the queue until [`Queued::settled`]: dropped before that (its future
/// dropped), it leaves the queue, or releases the permit it was granted as `ignore`.
pub(crate) struct Queued<'l> {
    pub limiter: &'l AdaptiveLimiter,
    pub partition: Option<usize>,
    pub slot: Option<Arc<Slot>>,
}

impl Queued<'_> {
    pub fn slot(&self) -> &Arc<Slot> {
        self.slot.as_ref().expect("a queued waiter has its slot until settled")
    }

    /// The wait ended (granted or timed out): the caller settles it.
    pub fn settled(mut self) -> (Option<usize>, Arc<Slot>) {
        (self.partition, self.slot.take().expect("settled once"))
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take()
            && let Some(mut permit) = self.limiter.leave(self.partition, &slot)
        {
            permit.release(Outcome::Ignore);
        }
    }
}

/// A queued waiter.
pub(crate) struct Waiter {
    pub slot: Arc<Slot>,
    pub partition: Option<usize>,
}

/// Ends a blocking wait from another thread ([`super::AdaptiveLimiter::acquire_blocking_cancellable`]):
/// a binding whose caller gave up (Go's `context` cancelled) has the waiter leave the queue at once,
/// rather than hold its place, and a thread, until a grant or the deadline. One `Cancel` serves
/// one wait at a time; once fired it stays fired.
#[derive(Clone, Default)]
pub struct Cancel {
    state: Arc<Mutex<CancelState>>,
}

#[derive(Default)]
struct CancelState {
    fired: bool,
    /// The wait in progress.
    slot: Option<Arc<Slot>>,
}

impl Cancel {
    /// Not fired.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Fires: the wait in progress returns now, and a later one does not start.
    pub fn cancel(&self) {
        let slot = {
            let mut s = lock(&self.state);
            s.fired = true;
            s.slot.take()
        };
        if let Some(slot) = slot {
            slot.cancel();
        }
    }

    /// Whether it fired.
    pub fn is_cancelled(&self) -> bool {
        lock(&self.state).fired
    }

    /// [`Slot::wait_until`] that this ends when it fires; fired already, it does not block (the
    /// slot's grant, if any, is still read).
    pub(crate) fn wait(&self, slot: &Arc<Slot>, deadline: Instant) -> Option<u64> {
        let watching = {
            let mut s = lock(&self.state);
            if !s.fired {
                s.slot = Some(slot.clone());
            }
            !s.fired
        };
        let granted = if watching { slot.wait_until(deadline) } else { slot.granted_at() };
        lock(&self.state).slot = None;
        granted
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel").field("fired", &self.is_cancelled()).finish()
    }
}
