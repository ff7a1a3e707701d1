//! The tokio runtime behind the `CompletableFuture` calls and the blocking close of a Redis
//! store. Two worker threads, started on first use; each attaches itself to the VM (as a
//! daemon) the first time it completes a future and stays attached.
//!
//! A call started from inside a completion (a dependent stage that runs on the completing
//! runtime thread and starts the next call, as a `thenCompose` loop does) is not spawned: the
//! task that completed the future runs it next, as a Rust task awaits one call after another.
//! A task spawned per call cost a scheduling round each (and, when it displaced the task in the
//! worker's LIFO slot, a wake-up of the other worker); the connection's driver then wrote the
//! pipelined requests in smaller batches: about twice the `writev`s per call, and ~20% more CPU
//! per call (`docs/bench-jvm.md`, the round "Redis, 64 futures in flight").

use std::cell::RefCell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use jni_sys::{JNIEnv, jlong, jobject};
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

thread_local! {
    /// Set while this runtime thread completes a Java future: the calls Java starts meanwhile,
    /// in order, which the completing task takes over instead of spawning a task for each.
    static STARTED: RefCell<Option<Vec<(Global, Call)>>> = const { RefCell::new(None) };
}

/// A future whose panics become an `Err` (the payload's text) instead of unwinding.
struct CatchUnwind(Call);

impl Future for CatchUnwind {
    type Output = Result<Result<Vec<jlong>, Error>, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".to_string()))),
        }
    }
}

/// Spawns `fut` and completes the Java `NativeFuture` `future` with its result. A panic inside
/// `fut` fails the future with the `internal` exception. Called from inside a completion on a
/// runtime thread, it hands the call to the completing task instead (the module's doc).
pub(crate) fn spawn<F>(env: *mut JNIEnv, future: jobject, fut: F) -> Result<(), Error>
where
    F: Future<Output = Result<Vec<jlong>, Error>> + Send + 'static,
{
    let rt = runtime()?;
    let global = unsafe { Global::new(env, future) }.ok_or_else(|| Error::store("out of JVM references"))?;
    let mut call = Some((global, Box::pin(fut) as Call));
    STARTED.with(|started| {
        if let Some(list) = started.borrow_mut().as_mut() {
            list.extend(call.take());
        }
    });
    if let Some((global, call)) = call {
        rt.spawn(run(global, call));
    }
    Ok(())
}

/// Runs a call, completes its future, then runs the first call Java started from inside that
/// completion (if any) on the same task; any further ones get tasks of their own.
/// (Boxed: it spawns itself, and a recursive `async fn` has no nameable `Send` type.)
fn run(global: Global, call: Call) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(chain(global, call))
}

async fn chain(global: Global, call: Call) {
    let mut next = Some((global, call));
    while let Some((global, call)) = next.take() {
        let result = match CatchUnwind(call).await {
            Ok(r) => r.map_err(|e| crate::env::parts(&e)),
            Err(text) => Err((crate::env::PANIC_CODE, -1, format!("panic: {text}"))),
        };
        let mut started = completing(|| complete(global, result)).into_iter();
        next = started.next();
        for (global, call) in started {
            tokio::spawn(run(global, call));
        }
        if next.is_some() {
            // A chain of calls that all complete at once (a memory store) still yields to the
            // runtime's other tasks now and then, as a task per call did.
            tokio::task::coop::consume_budget().await;
        }
    }
}

/// Runs `f` (a completion upcall) and returns the calls Java started on this thread meanwhile.
fn completing(f: impl FnOnce()) -> Vec<(Global, Call)> {
    /// Clears the list however `f` ends; if it unwound, the calls in it still run, each a task.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            for (global, call) in STARTED.with(|started| started.borrow_mut().take()).unwrap_or_default() {
                tokio::spawn(run(global, call));
            }
        }
    }
    STARTED.with(|started| *started.borrow_mut() = Some(Vec::new()));
    let _reset = Reset;
    f();
    STARTED.with(|started| started.borrow_mut().take()).unwrap_or_default()
}
