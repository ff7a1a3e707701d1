//! The tokio runtime behind the `CompletableFuture` calls and the blocking close of a Redis
//! store. Two worker threads, started on first use; each attaches itself to the VM (as a
//! daemon) the first time it completes a future.

use std::future::Future;
use std::sync::OnceLock;

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

/// Spawns `fut` and completes the Java `CompletableFuture<long[]>` `future` with its result.
/// A panic inside `fut` fails the future with the `internal` exception.
pub(crate) fn spawn<F>(env: *mut JNIEnv, future: jobject, fut: F) -> Result<(), Error>
where
    F: Future<Output = Result<Vec<jlong>, Error>> + Send + 'static,
{
    let rt = runtime()?;
    let global = unsafe { Global::new(env, future) }.ok_or_else(|| Error::store("out of JVM references"))?;
    rt.spawn(async move {
        let inner = tokio::spawn(fut).await;
        let result = match inner {
            Ok(r) => r.map_err(|e| crate::env::parts(&e)),
            Err(e) => Err((crate::env::PANIC_CODE, -1, format!("panic: {e}"))),
        };
        complete(global, result);
    });
    Ok(())
}
