//! Rust futures as asyncio awaitables, cheaply.
//!
//! `pyo3_async_runtimes::future_into_py` hands every result back by taking the GIL on a tokio
//! thread and calling `loop.call_soon_threadsafe`. Under load that is one GIL handoff and one
//! loop wake-up per call, and it caps a busy event loop at a few ten thousand awaits a second.
//! This module does the same job in batches. Each event loop gets one [`Bridge`] with a socket
//! pair that the loop watches (`loop.add_reader`). A finished future puts its result on a queue
//! and writes one byte, but only when the queue was empty. The loop thread, which already holds
//! the GIL, then drains the whole queue into the asyncio futures. Tokio threads never take the
//! GIL on the success path.
//!
//! A future that is already done on its first poll, as every memory-store call is, becomes a
//! finished asyncio future at once, without a thread hop. Cancelling the asyncio future does not
//! abort the Rust work: a check that was already sent may have counted, so its result is simply
//! dropped.

use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Turns a finished result into a Python object on the loop thread.
type Deliver = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// Results waiting for the loop thread, and the socket that wakes it.
struct Mailbox {
    done: Mutex<Vec<(u64, Deliver)>>,
    wake: UnixStream,
}

impl Mailbox {
    fn post(&self, id: u64, deliver: Deliver) {
        let was_empty = {
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            done.push((id, deliver));
            done.len() == 1
        };
        if was_empty {
            // Non-blocking: if the socket buffer is full, a wake-up is already pending.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// One event loop's side of the bridge: its pending asyncio futures and the drain callback.
#[pyclass(frozen, module = "throttlekit")]
pub struct Bridge {
    mailbox: Arc<Mailbox>,
    wakeup: UnixStream,
    pending: Mutex<HashMap<u64, Py<PyAny>>>,
    next: AtomicU64,
}

#[pymethods]
impl Bridge {
    /// Called by the event loop when the wake-up socket is readable: settles every finished future.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        // Empty the socket first, then the queue: a result posted in between either lands in this
        // batch or writes a fresh byte, so none is left waiting without a wake-up.
        let mut buf = [0u8; 256];
        while matches!((&self.wakeup).read(&mut buf), Ok(n) if n > 0) {}
        let done = std::mem::take(&mut *self.mailbox.done.lock().unwrap_or_else(|e| e.into_inner()));
        for (id, deliver) in done {
            let future = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            if let Some(future) = future {
                settle(py, future.bind(py), deliver(py))?;
            }
        }
        Ok(())
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
    let bridge = Bound::new(
        py,
        Bridge {
            mailbox: Arc::new(Mailbox { done: Mutex::new(Vec::new()), wake }),
            wakeup,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
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
    let mut fut: Pin<Box<F>> = Box::pin(fut);
    // One poll here, inside the runtime's context (timers and spawns need it): memory-store
    // calls finish now and never leave this thread.
    let first = {
        let _context = runtime.enter();
        fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    };
    if let Poll::Ready(result) = first {
        settle(py, &future, convert(py, result))?;
        return Ok(future);
    }

    let Ok(bridge) = bridge(&event_loop) else {
        // A loop that takes no attributes or readers (exotic loops): the generic path.
        return pyo3_async_runtimes::tokio::future_into_py(py, fut);
    };
    let bridge = bridge.get();
    let id = bridge.next.fetch_add(1, Ordering::Relaxed);
    bridge.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, future.clone().unbind());
    let mailbox = bridge.mailbox.clone();
    runtime.spawn(async move {
        let result = fut.await;
        mailbox.post(id, Box::new(move |py| convert(py, result)));
    });
    Ok(future)
}

fn convert<T: for<'a> IntoPyObject<'a>>(py: Python<'_>, result: PyResult<T>) -> PyResult<Py<PyAny>> {
    result?.into_py_any(py)
}
