//! The tokio runtime behind the `CompletableFuture` calls and the blocking close of a Redis
//! store. Two worker threads, started on first use; each attaches itself to the VM (as a
//! daemon) the first time it completes a future.

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

/// A future whose panics become an `Err` (the payload's text) instead of unwinding: one task
/// per call, where a spawned inner task would cost a second scheduling round.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

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

/// Spawns `fut` and completes the Java `CompletableFuture<long[]>` `future` with its result.
/// A panic inside `fut` fails the future with the `internal` exception.
pub(crate) fn spawn<F>(env: *mut JNIEnv, future: jobject, fut: F) -> Result<(), Error>
where
    F: Future<Output = Result<Vec<jlong>, Error>> + Send + 'static,
{
    let rt = runtime()?;
    let global = unsafe { Global::new(env, future) }.ok_or_else(|| Error::store("out of JVM references"))?;
    rt.spawn(async move {
        let result = match CatchUnwind(Box::pin(fut)).await {
            Ok(r) => r.map_err(|e| crate::env::parts(&e)),
            Err(text) => Err((crate::env::PANIC_CODE, -1, format!("panic: {text}"))),
        };
        complete(global, result);
    });
    Ok(())
}
