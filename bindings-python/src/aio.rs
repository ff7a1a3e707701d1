//! Rust futures as asyncio awaitables, cheaply.
//!
//! `pyo3_async_runtimes::future_into_py` runs every call as a tokio task and hands each result
//! back by taking the GIL on a tokio thread and calling `loop.call_soon_threadsafe`: one task,
//! one GIL handoff and one loop wake-up per call, which caps a busy event loop at a few ten
//! thousand awaits a second. Here the event loop itself drives the futures. Each loop gets one
//! [`Bridge`] with a socket pair that the loop watches (`loop.add_reader`). A call's future is
//! polled on the loop thread, inside the tokio runtime's context, with a waker that puts the
//! call's number on a queue and, when the queue was empty, has one byte written ([`wake_loop`]). The loop
//! thread, which already holds the GIL, then polls every woken future and settles the finished
//! ones. No tokio task is spawned per call and tokio threads never take the GIL: they only run
//! the connections' drivers, whose replies wake the calls. However many connections the
//! replies of one batch come back on (a cluster's masters), the loop wakes once for all the
//! calls woken before it runs.
//!
//! The loop also writes its calls' commands itself: the calls of a loop turn are polled inside
//! the bridge's [`Batch`], so they wake no connection driver, and the turn's first call that
//! queued a command schedules [`Bridge::write`] (`call_soon`), which runs after the turn's
//! callbacks and sends each connection's commands in one write (a drain writes what its polls
//! queued at its end). Why: a driver woken from the loop thread ran on a Tokio worker while the
//! loop was still making the turn's calls, wrote the first few alone and was woken again by the
//! next; on a cluster each master then read its share of a turn in several small writes, and
//! both the client (a thread wake-up per write) and the servers (a read and a wake-up per write)
//! paid per write.
//!
//! A future that is already done on its first poll, as every memory-store call is, becomes a
//! finished asyncio future at once. Cancelling the asyncio future does not abort the Rust work:
//! a check that was already sent may have counted, so the future is still driven to its end and
//! its result dropped. A loop that goes away with calls still under way hands them to the
//! runtime, which finishes them.

use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use pyo3::IntoPyObjectExt;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
#[cfg(feature = "redis")]
use throttlekit::redis::Batch;

/// Turns a finished result into a Python object on the loop thread.
type Deliver = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A call's future, as the loop drives it.
type Call = Pin<Box<dyn Future<Output = Deliver> + Send>>;

/// The numbers of the calls woken since the loop last drained, and the socket that wakes it.
struct Mailbox {
    woken: Mutex<Vec<u64>>,
    /// Tells [`wake_loop`] to write the wake-up byte.
    wake: tokio::sync::Notify,
    /// The bridge is gone: [`wake_loop`] ends.
    closed: AtomicBool,
}

impl Mailbox {
    fn post(&self, id: u64) {
        let was_empty = {
            let mut woken = self.woken.lock().unwrap_or_else(|e| e.into_inner());
            woken.push(id);
            woken.len() == 1
        };
        if was_empty {
            self.wake.notify_one();
        }
    }
}

/// Writes the loop's wake-up byte each time the mailbox's first call of a batch is posted.
///
/// Why a task rather than a write in the waker: a connection's driver wakes every call whose
/// reply it read in one go, and the byte written at the first of them would wake the loop while
/// the driver is still handing out the rest. Woken from the driver, this task runs on the same
/// worker right after the driver's turn (tokio's LIFO slot), so one byte covers the whole read,
/// and the replies of the other connections read meanwhile.
async fn wake_loop(mailbox: Arc<Mailbox>, socket: UnixStream) {
    loop {
        mailbox.wake.notified().await;
        if mailbox.closed.load(Ordering::Acquire) {
            return;
        }
        // Non-blocking: if the socket buffer is full, a wake-up is already pending.
        let _ = (&socket).write(&[1]);
    }
}

/// One call's waker: tells the loop that the call can make progress.
struct CallWaker {
    id: u64,
    mailbox: Arc<Mailbox>,
}

impl Wake for CallWaker {
    fn wake(self: Arc<Self>) {
        self.mailbox.post(self.id);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.mailbox.post(self.id);
    }
}

/// A call under way: its future, the waker it is polled with and the asyncio future it settles.
struct Pending {
    call: Call,
    waker: Waker,
    future: Py<PyAny>,
}

/// One event loop's side of the bridge: its calls under way and the drain callback.
#[pyclass(frozen, module = "throttlekit")]
pub struct Bridge {
    mailbox: Arc<Mailbox>,
    wakeup: UnixStream,
    /// Touched only on the loop thread (which holds the GIL); the lock makes the class `Sync`.
    pending: Mutex<HashMap<u64, Pending>>,
    next: AtomicU64,
    /// The connections the loop's calls queued commands on since the last write: written once
    /// each, by [`Bridge::write`] at the turn's end (see the module docs).
    batch: Mutex<Batch>,
    /// A [`Bridge::write`] is scheduled on the loop.
    write_scheduled: AtomicBool,
}

impl Bridge {
    /// Polls `call` once; settles its asyncio future when it is done, or keeps it for its next wake.
    /// A call that panics fails with `PanicException` (as `future_into_py`'s task would), alone.
    /// Commands it queues are held in the bridge's batch.
    fn poll(&self, py: Python<'_>, id: u64, mut call: Pending) -> PyResult<()> {
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        let polled = batch.hold(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                call.call.as_mut().poll(&mut Context::from_waker(&call.waker))
            }))
        });
        drop(batch);
        match polled {
            Ok(Poll::Ready(deliver)) => settle(py, call.future.bind(py), deliver(py)),
            Ok(Poll::Pending) => {
                self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, call);
                Ok(())
            }
            Err(payload) => {
                let what = throttlekit::panic_message(&*payload).to_owned();
                settle(py, call.future.bind(py), Err(PanicException::new_err(what)))
            }
        }
    }
}

#[pymethods]
impl Bridge {
    /// Called by the event loop when the wake-up socket is readable: polls every woken call and
    /// settles the finished ones.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        // Empty the socket first, then the queue: a wake posted in between either lands in this
        // batch or writes a fresh byte, so none is left waiting without a wake-up.
        let mut buf = [0u8; 256];
        while matches!((&self.wakeup).read(&mut buf), Ok(n) if n > 0) {}
        let woken = std::mem::take(&mut *self.mailbox.woken.lock().unwrap_or_else(|e| e.into_inner()));
        // Timers and spawns need the runtime's context, as on the first poll.
        let _context = pyo3_async_runtimes::tokio::get_runtime().enter();
        let mut failed = Ok(());
        for id in woken {
            // Absent: woken twice in one batch and already finished.
            let call = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            if let Some(call) = call {
                // One call's failure to settle must not strand the others of the batch.
                let result = self.poll(py, id, call);
                if failed.is_ok() {
                    failed = result;
                }
            }
        }
        // What the polls sent again (a redirect, a script loaded) leaves now.
        self.batch.lock().unwrap_or_else(|e| e.into_inner()).write();
        failed
    }

    /// Scheduled with `call_soon` by a turn's first call that queued a command: runs once the
    /// turn's callbacks have, and writes each connection's commands of the turn at once.
    fn write(&self) {
        self.write_scheduled.store(false, Ordering::Relaxed);
        self.batch.lock().unwrap_or_else(|e| e.into_inner()).write();
    }
}

impl Drop for Bridge {
    /// The loop is gone: its calls under way finish on the runtime (a check that was sent may
    /// have counted, and a connection is not left with a call abandoned half-way).
    fn drop(&mut self) {
        self.mailbox.closed.store(true, Ordering::Release);
        self.mailbox.wake.notify_one();
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        let runtime = pyo3_async_runtimes::tokio::get_runtime();
        for (_, call) in pending {
            drop(runtime.spawn(call.call));
        }
    }
}

/// Sets `result` on the asyncio future unless it was cancelled meanwhile.
fn settle(py: Python<'_>, future: &Bound<'_, PyAny>, result: PyResult<Py<PyAny>>) -> PyResult<()> {
    if future.call_method0(pyo3::intern!(py, "cancelled"))?.is_truthy()? {
        return Ok(());
    }
    match result {
        Ok(value) => future.call_method1(pyo3::intern!(py, "set_result"), (value,))?,
        Err(err) => future.call_method1(pyo3::intern!(py, "set_exception"), (err.into_value(py),))?,
    };
    Ok(())
}

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
const BRIDGE_ATTR: &str = "_throttlekit_bridge";

/// The bridge of `event_loop`, created and registered with `add_reader` on first use.
fn bridge<'py>(event_loop: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Bridge>> {
    let py = event_loop.py();
    if let Ok(existing) = event_loop.getattr(BRIDGE_ATTR)
        && let Ok(b) = existing.cast_into::<Bridge>()
    {
        return Ok(b);
    }
    let (wake, wakeup) = UnixStream::pair()?;
    wake.set_nonblocking(true)?;
    wakeup.set_nonblocking(true)?;
    let fd = wakeup.as_raw_fd();
    let mailbox = Arc::new(Mailbox {
        woken: Mutex::new(Vec::new()),
        wake: tokio::sync::Notify::new(),
        closed: AtomicBool::new(false),
    });
    drop(pyo3_async_runtimes::tokio::get_runtime().spawn(wake_loop(mailbox.clone(), wake)));
    let bridge = Bound::new(
        py,
        Bridge {
            mailbox,
            wakeup,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            batch: Mutex::new(Batch::default()),
            write_scheduled: AtomicBool::new(false),
        },
    )?;
    event_loop.call_method1("add_reader", (fd, bridge.getattr("drain")?))?;
    event_loop.setattr(BRIDGE_ATTR, &bridge)?;
    Ok(bridge)
}

/// `fut` as an awaitable on the running event loop (a `RuntimeError` without one, as asyncio).
pub fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let get_loop = GET_RUNNING_LOOP
        .get_or_try_init(py, || py.import("asyncio")?.getattr("get_running_loop").map(Bound::unbind))?;
    let event_loop = get_loop.bind(py).call0()?;
    let future = event_loop.call_method0(pyo3::intern!(py, "create_future"))?;
    let runtime = pyo3_async_runtimes::tokio::get_runtime();

    let Ok(bridge) = bridge(&event_loop) else {
        // A loop that takes no attributes or readers (exotic loops): one poll here, in the
        // runtime's context (memory-store calls finish now), then the generic path.
        let mut fut: Pin<Box<F>> = Box::pin(fut);
        let first = {
            let _context = runtime.enter();
            fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
        };
        if let Poll::Ready(result) = first {
            settle(py, &future, convert(py, result))?;
            return Ok(future);
        }
        return pyo3_async_runtimes::tokio::future_into_py(py, fut);
    };
    let bound = bridge;
    let bridge = bound.get();
    let id = bridge.next.fetch_add(1, Ordering::Relaxed);
    let call: Call = Box::pin(async move {
        let result = fut.await;
        Box::new(move |py: Python<'_>| convert(py, result)) as Deliver
    });
    let waker = Waker::from(Arc::new(CallWaker { id, mailbox: bridge.mailbox.clone() }));
    // The first poll here, inside the runtime's context (timers and spawns need it): a
    // memory-store call finishes now, a Redis call queues its command.
    let _context = runtime.enter();
    bridge.poll(py, id, Pending { call, waker, future: future.clone().unbind() })?;
    // The turn's first call that queued a command has the turn's commands written after it.
    if !bridge.write_scheduled.load(Ordering::Relaxed)
        && !bridge.batch.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    {
        bridge.write_scheduled.store(true, Ordering::Relaxed);
        event_loop.call_method1(pyo3::intern!(py, "call_soon"), (bound.getattr(pyo3::intern!(py, "write"))?,))?;
    }
    Ok(future)
}

/// Without the Redis store no call queues a command: nothing is held.
#[cfg(not(feature = "redis"))]
#[derive(Default)]
struct Batch;

#[cfg(not(feature = "redis"))]
impl Batch {
    fn hold<R>(&mut self, f: impl FnOnce() -> R) -> R {
        f()
    }

    fn is_empty(&self) -> bool {
        true
    }

    fn write(&mut self) {}
}

fn convert<T: for<'a> IntoPyObject<'a>>(py: Python<'_>, result: PyResult<T>) -> PyResult<Py<PyAny>> {
    result?.into_py_any(py)
}
