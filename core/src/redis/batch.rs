//! A binding's event-loop turn as one write per connection: the calls a thread queues while it
//! holds a [`Batch`] open wake no connection driver; the batch writes each connection's queued
//! calls itself when its owner says the turn is over ([`Batch::write`]).
//!
//! Why: a call queued on a connection whose queue was empty wakes that connection's driver task
//! ([`super::pipelined`]). When the calls come from a thread outside the runtime (Python's
//! asyncio loop drives its awaited calls itself: `bindings-python/src/aio.rs`), that wake-up
//! crosses to a Tokio worker, which runs while the loop is still making the turn's calls and
//! writes the first few alone; the next call finds the queue empty and wakes it again. On a
//! cluster every master's connection pays that, so each master received its share of a turn in
//! several small writes, and read, woke up and answered for fewer commands each time. Held in a
//! batch, a turn's calls leave in one write per connection (a connection's [`WRITE_EVERY`]
//! calls still write themselves at once), from the thread that made them, with no wake-up.
//!
//! Nothing is stranded: a batch dropped unwritten wakes the drivers of what it held, and a write
//! the socket does not take whole is finished by the driver, in order.
//!
//! [`WRITE_EVERY`]: super::pipelined

use std::cell::RefCell;
use std::sync::Arc;

use super::pipelined::{Shared, flush_socket};

thread_local! {
    /// The connections of the batch this thread holds open, if any.
    static OPEN: RefCell<Option<Vec<Arc<Shared>>>> = const { RefCell::new(None) };
}

/// Connections with calls queued and not written, held for their owner to write at once.
#[derive(Default)]
pub struct Batch {
    conns: Vec<Arc<Shared>>,
}

impl Batch {
    /// Runs `f`; calls it queues on this thread on a connection with nothing queued wake no
    /// driver and are held here until [`Batch::write`] (or the batch's drop).
    pub fn hold<R>(&mut self, f: impl FnOnce() -> R) -> R {
        /// Takes the held connections back into the batch however `f` ends.
        struct Close<'a> {
            conns: &'a mut Vec<Arc<Shared>>,
            outer: Option<Option<Vec<Arc<Shared>>>>,
        }
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                let outer = self.outer.take().flatten();
                *self.conns = OPEN.with(|o| o.replace(outer)).unwrap_or_default();
            }
        }
        let outer = OPEN.with(|o| o.replace(Some(std::mem::take(&mut self.conns))));
        let _close = Close { conns: &mut self.conns, outer: Some(outer) };
        f()
    }

    /// Whether no connection waits for this batch's write.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Writes each held connection's queued calls now, from this thread; a driver is woken only
    /// for what its socket did not take (or an error, which the driver then reports to the calls).
    pub fn write(&mut self) {
        for shared in self.conns.drain(..) {
            let written = {
                let mut state = shared.state.lock();
                if state.dead || state.released {
                    continue;
                }
                flush_socket(&mut state, &shared.stream)
            };
            if !matches!(written, Ok(true)) {
                shared.wake.notify_one();
            }
        }
    }
}

impl Drop for Batch {
    /// Unwritten: the drivers write what was held.
    fn drop(&mut self) {
        for shared in self.conns.drain(..) {
            shared.wake.notify_one();
        }
    }
}

/// Holds `shared` in this thread's open batch, if there is one (it then writes the connection's
/// queue); `false` when the caller must wake the driver itself.
pub(super) fn held(shared: &Arc<Shared>) -> bool {
    OPEN.with(|o| match &mut *o.borrow_mut() {
        Some(conns) => {
            if !conns.iter().any(|c| Arc::ptr_eq(c, shared)) {
                conns.push(shared.clone());
            }
            true
        }
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::Batch;
    use crate::redis::pipelined::tests::{Call, pair, ping, queue, read_until, readable_now};

    /// Lets the current-thread runtime run its tasks (a woken driver would write) a few turns.
    fn run_tasks(rt: &tokio::runtime::Runtime) {
        rt.block_on(async {
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
        });
    }

    /// Calls queued on two connections inside a batch wake neither driver: nothing is written
    /// however long the runtime runs, until the batch writes, which sends each connection's
    /// calls whole and in order; every call then gets its own reply.
    #[test]
    fn calls_held_in_a_batch_are_written_by_the_batch_alone() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (one, mut server_one) = pair(&rt);
        let (two, mut server_two) = pair(&rt);
        let mut batch = Batch::default();
        let calls: Vec<Call> = batch
            .hold(|| (0..5).map(|i| if i % 2 == 0 { queue(&one, ping(i)) } else { queue(&two, ping(i)) }).collect());
        assert!(!batch.is_empty());
        run_tasks(&rt);
        assert!(readable_now(&mut server_one).is_empty(), "a held call woke its driver");
        assert!(readable_now(&mut server_two).is_empty(), "a held call woke its driver");
        batch.write();
        assert!(batch.is_empty());
        let (even, odd): (Vec<usize>, Vec<usize>) = (0..5).partition(|i| i % 2 == 0);
        let expected_one: Vec<u8> = even.iter().copied().flat_map(ping).collect();
        let expected_two: Vec<u8> = odd.iter().copied().flat_map(ping).collect();
        assert_eq!(read_until(&mut server_one, expected_one.len()), expected_one);
        assert_eq!(read_until(&mut server_two, expected_two.len()), expected_two);
        for i in 0..5 {
            let server = if i % 2 == 0 { &mut server_one } else { &mut server_two };
            server.write_all(format!(":{i}\r\n").as_bytes()).unwrap();
        }
        rt.block_on(async {
            for (i, call) in calls.into_iter().enumerate() {
                assert_eq!(call.await.unwrap(), format!(":{i}\r\n").into_bytes());
            }
        });
        // Outside a batch a call wakes its driver, as before.
        let three = queue(&one, ping(9));
        run_tasks(&rt);
        assert_eq!(read_until(&mut server_one, ping(9).len()), ping(9));
        server_one.write_all(b":9\r\n").unwrap();
        assert_eq!(rt.block_on(three).unwrap(), b":9\r\n");
    }

    /// A call from a thread without an open batch, on a connection another thread's batch
    /// holds, wakes the driver, which writes both: a batch whose turn is long (or whose loop
    /// stopped) keeps no other thread's call waiting.
    #[test]
    fn another_threads_call_on_a_held_connection_wakes_the_driver() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (conn, mut server) = pair(&rt);
        let mut batch = Batch::default();
        let first = batch.hold(|| queue(&conn, ping(1)));
        run_tasks(&rt);
        assert!(readable_now(&mut server).is_empty(), "a held call woke its driver");
        let other = conn.clone();
        // `Call` is not `Send`: the other thread queues and hands back only whether it is pending.
        let second = std::thread::spawn(move || {
            let mut call = queue(&other, ping(2));
            let waker = std::task::Waker::noop();
            assert!(call.as_mut().poll(&mut std::task::Context::from_waker(waker)).is_pending());
            drop(call);
        });
        second.join().unwrap();
        run_tasks(&rt);
        let expected: Vec<u8> = [ping(1), ping(2)].concat();
        assert_eq!(read_until(&mut server, expected.len()), expected, "the driver wrote both");
        server.write_all(b":1\r\n:2\r\n").unwrap();
        assert_eq!(rt.block_on(first).unwrap(), b":1\r\n");
        batch.write();
    }

    /// A batch dropped without writing wakes the drivers of what it held: no call is stranded.
    #[test]
    fn a_batch_dropped_unwritten_leaves_the_writes_to_the_drivers() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (conn, mut server) = pair(&rt);
        let mut batch = Batch::default();
        let call = batch.hold(|| queue(&conn, ping(1)));
        drop(batch);
        run_tasks(&rt);
        assert_eq!(read_until(&mut server, ping(1).len()), ping(1));
        server.write_all(b":1\r\n").unwrap();
        assert_eq!(rt.block_on(call).unwrap(), b":1\r\n");
    }
}
