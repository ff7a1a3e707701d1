//! The tokio runtime behind the `CompletableFuture` calls and the blocking close of a Redis
//! store. Two worker threads, started on first use; each attaches itself to the VM (as a
//! daemon) the first time it completes a future and stays attached.
//!
//! **Hubs, not a task per call.** Every asynchronous call is hosted by one of two long-lived
//! tasks, the hubs (one per worker). A hub polls the calls that are ready, completes their Java
//! futures one after another (the upcall runs the dependent stages on the hub's thread), and
//! polls the calls those stages started right away, in the same turn: so the requests that a
//! batch of replies provokes all reach the connection's channel before its driver runs again,
//! and go to Redis in one `writev`. With a task per call (or per chain of calls), the driver,
//! woken into the worker's LIFO slot by the first request, ran between every two tasks and wrote
//! ~2.5-5.5 requests a `writev` against Redis's ~26 replies a read (the round of 2026-11-26
//! 20:55 UTC, listed in docs/bench-history.md). A call Java starts from any other thread goes to a hub's inbox (a
//! mutex-guarded `Vec` and a waker: one push and at most one wake-up of the hub, never a wait).
//!
//! A hub runs at most [`TURN`] completions a turn, then yields, so that a chain of calls that all
//! complete at once (a memory store) lets the runtime's other tasks run. A stage that waits
//! (`join`, `get`) for a throttlekit call holds the hub's thread and every call the hub hosts:
//! stages must never wait for a call (README: give blocking stages an executor of their own).
//! A panic in a call fails its future with the `internal` exception; a panic while completing
//! is caught, so a hub never unwinds and its other calls carry on.

use std::cell::RefCell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use futures_util::task::AtomicWaker;
use jni_sys::{JNIEnv, jint, jlong, jobject};
use throttlekit::Error;

use crate::env::{Global, complete};

fn runtime() -> Result<&'static tokio::runtime::Runtime, Error> {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("throttlekit-jvm")
        .enable_all()
        .build()
        .map_err(Error::store)?;
    Ok(RT.get_or_init(|| rt))
}

/// Runs `fut` to completion on the runtime, blocking the calling (Java) thread.
pub(crate) fn block_on<F: Future + Send + 'static>(fut: F) -> Result<F::Output, Error>
where
    F::Output: Send + 'static,
{
    let handle = runtime()?.spawn(fut);
    futures_lite_block_on(handle).map_err(|e| Error::store(format!("the call did not finish: {e}")))
}

/// Waits for a task from a thread that is not a runtime worker.
fn futures_lite_block_on<T>(handle: tokio::task::JoinHandle<T>) -> Result<T, tokio::task::JoinError> {
    // A current-thread runtime only to wait: the task itself runs on the shared runtime.
    let waiter = tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime builds");
    waiter.block_on(handle)
}

/// One asynchronous call's work: the result longs, or core's error.
type Call = Pin<Box<dyn Future<Output = Result<Vec<jlong>, Error>> + Send>>;

/// A finished call's result as `complete` takes it.
type Outcome = Result<Vec<jlong>, (jint, jlong, String)>;

thread_local! {
    /// Set while a hub completes a Java future on this runtime thread: the calls Java starts
    /// meanwhile, in order, which that hub takes in (the module's doc).
    static STARTED: RefCell<Option<Vec<(Global, Call)>>> = const { RefCell::new(None) };
}

/// A call the hub hosts: its future's global reference and its work, whose panics become an
/// `internal` error instead of unwinding into the hub.
struct Running {
    global: Option<Global>,
    call: Call,
}

impl Future for Running {
    type Output = (Global, Outcome);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let outcome = match catch_unwind(AssertUnwindSafe(|| this.call.as_mut().poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(r)) => r.map_err(|e| crate::env::parts(&e)),
            Err(payload) => Err((crate::env::PANIC_CODE, -1, crate::panic_message(&*payload))),
        };
        // A `Running` is polled again only after it was ready if the hub's set is broken; the
        // global reference is taken once.
        match this.global.take() {
            Some(global) => Poll::Ready((global, outcome)),
            None => Poll::Pending,
        }
    }
}

/// Where calls started off the runtime's threads wait for their hub, and how it is woken.
struct Inbox {
    calls: Mutex<Vec<(Global, Call)>>,
    waker: AtomicWaker,
}

/// The hubs' inboxes; each hub task is spawned with its inbox, on first use.
fn inboxes() -> Result<&'static [Inbox; HUBS], Error> {
    static INBOXES: OnceLock<[Inbox; HUBS]> = OnceLock::new();
    if let Some(i) = INBOXES.get() {
        return Ok(i);
    }
    let rt = runtime()?;
    let mut spawn = false;
    let inboxes = INBOXES.get_or_init(|| {
        spawn = true;
        std::array::from_fn(|_| Inbox { calls: Mutex::new(Vec::new()), waker: AtomicWaker::new() })
    });
    if spawn {
        for inbox in inboxes {
            rt.spawn(Hub { inbox, calls: FuturesUnordered::new() });
        }
    }
    Ok(inboxes)
}

/// One hub per runtime worker: two tasks host every call between them.
const HUBS: usize = 2;

/// The most completions a hub runs in one turn before it lets the runtime's other tasks (the
/// connection's driver, the other hub) run: a chain of calls that all complete at once (a
/// memory store) would otherwise hold its thread.
const TURN: usize = 256;

/// A task hosting many calls (see the module's doc): it polls the calls that are ready, completes
/// their futures, and takes in the calls those completions started, all in one turn.
struct Hub {
    inbox: &'static Inbox,
    calls: FuturesUnordered<Running>,
}

impl Future for Hub {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        this.inbox.waker.register(cx.waker());
        let mut completed = 0;
        loop {
            let arrived = std::mem::take(&mut *this.inbox.calls.lock().unwrap_or_else(|p| p.into_inner()));
            let idle = arrived.is_empty();
            this.take(arrived);
            match this.calls.poll_next_unpin(cx) {
                Poll::Ready(Some((global, outcome))) => {
                    let started = completing(|| complete(global, outcome));
                    this.take(started);
                    completed += 1;
                    if completed >= TURN {
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
                // Nothing ready (or nothing hosted): done for this turn unless calls arrived.
                Poll::Ready(None) | Poll::Pending if idle => return Poll::Pending,
                Poll::Ready(None) | Poll::Pending => {}
            }
        }
    }
}

impl Hub {
    fn take(&mut self, calls: Vec<(Global, Call)>) {
        for (global, call) in calls {
            self.calls.push(Running { global: Some(global), call });
        }
    }
}

/// Completes the Java `NativeFuture` `future` with the result of `fut`, on a runtime thread. A
/// panic inside `fut` fails the future with the `internal` exception. Called from inside a
/// completion, the call joins the completing hub; from any other thread, it goes to a hub's
/// inbox (the module's doc). Never blocks.
pub(crate) fn spawn<F>(env: *mut JNIEnv, future: jobject, fut: F) -> Result<(), Error>
where
    F: Future<Output = Result<Vec<jlong>, Error>> + Send + 'static,
{
    let inboxes = inboxes()?;
    let global = unsafe { Global::new(env, future) }.ok_or_else(|| Error::store("out of JVM references"))?;
    let mut call = Some((global, Box::pin(fut) as Call));
    STARTED.with(|started| {
        if let Some(list) = started.borrow_mut().as_mut() {
            list.extend(call.take());
        }
    });
    if let Some(call) = call {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let inbox = &inboxes[NEXT.fetch_add(1, Ordering::Relaxed) % HUBS];
        inbox.calls.lock().unwrap_or_else(|p| p.into_inner()).push(call);
        inbox.waker.wake();
    }
    Ok(())
}

/// Runs `f` (a completion upcall) and returns the calls Java started on this thread meanwhile;
/// a panic in `f` is caught here (the hub and its other calls carry on).
fn completing(f: impl FnOnce()) -> Vec<(Global, Call)> {
    STARTED.with(|started| *started.borrow_mut() = Some(Vec::new()));
    let _ = catch_unwind(AssertUnwindSafe(f));
    STARTED.with(|started| started.borrow_mut().take()).unwrap_or_default()
}
