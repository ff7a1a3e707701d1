//! Promises settled through one threadsafe function per JS environment.
//!
//! Why: napi-rs's `Env::spawn_future` makes a threadsafe function for every Promise (a libuv
//! async handle, an async resource, an env cleanup hook, an interned name) and tears it down
//! when it settles. On the event loop that costs more than the call itself: with 64 calls in
//! flight on the in-process store, `check()` managed ~10 µs a call, and on Redis that, not the
//! server, capped throughput. Here an environment has one threadsafe function, made on first
//! use; a finished call queues a small job on it, and Node runs every queued job in one wake-up
//! of the event loop.
//!
//! Lifetimes:
//! - The threadsafe function keeps the event loop alive only while calls are pending (it is
//!   ref'd when the count of pending calls leaves 0, unref'd when it returns there), like a
//!   Promise of napi-rs's.
//! - At environment teardown (process exit, worker termination) our cleanup hook runs before
//!   Node's own teardown of the threadsafe function (hooks run in reverse order of
//!   registration) and takes the handle out of the shared slot under its lock, so a Tokio
//!   thread finishing later finds nothing to call and drops its job; it never touches a freed
//!   function. (napi-rs guards its per-Promise functions the same way.)
//! - A call whose future never finishes normally (a panic, the runtime shutting down) still
//!   settles: its [`Completion`] rejects the Promise when dropped unsent.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{Env, sys};

/// Work for the JS thread: settle one Promise (`None` env: the environment is gone, drop it).
type Job = Box<dyn FnOnce(sys::napi_env) + Send>;

/// The threadsafe function of one environment, `None` once it is being torn down.
struct Slot(Mutex<Option<Tsfn>>);

struct Tsfn(sys::napi_threadsafe_function);
// SAFETY: napi_call_threadsafe_function may be called from any thread; the handle is only
// used under `Slot`'s lock, which teardown also takes before the function is freed.
unsafe impl Send for Tsfn {}

/// The current JS thread's channel (one environment per thread: main or worker).
struct Local {
    env: sys::napi_env,
    tsfn: sys::napi_threadsafe_function,
    slot: Arc<Slot>,
    /// Calls started and not yet settled, to ref the function only while there are some.
    pending: Cell<usize>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// The Promise that settles with what `fut` returns, converted on the JS thread.
pub fn spawn<'e, T, F>(env: &'e Env, fut: F) -> napi::Result<PromiseRaw<'e, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let raw_env = env.raw();
    let Some(slot) = channel(raw_env)? else {
        // Not the environment this thread's channel serves (an embedder running several):
        // napi-rs's own path, which is correct everywhere, only slower.
        return env.spawn_future(async move { Ok(fut.await) });
    };
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the JS thread of `raw_env`, inside a call.
    check(unsafe { sys::napi_create_promise(raw_env, &mut deferred, &mut promise) })?;
    started(raw_env)?;
    let completion = Completion { deferred: Deferred(deferred), slot: Some(slot) };
    // napi-rs panics when its runtime is gone (teardown); the future, dropped with its
    // `Completion`, has then queued the rejection, so the caller still gets a Promise that
    // settles (instead of one that rejects with nobody holding it).
    let _ = catch_unwind(AssertUnwindSafe(|| {
        napi::bindgen_prelude::spawn(async move {
            let value = fut.await;
            completion.send(value);
        })
    }));
    Ok(PromiseRaw::new(raw_env, promise))
}

struct Deferred(sys::napi_deferred);
// SAFETY: the deferred is only used on the JS thread, by the job it travels in.
unsafe impl Send for Deferred {}

/// A pending Promise on its way back: settled by `send`, or rejected if dropped unsent.
struct Completion {
    deferred: Deferred,
    slot: Option<Arc<Slot>>,
}

impl Completion {
    fn send<T: ToNapiValue + Send + 'static>(mut self, value: T) {
        let deferred = Deferred(self.deferred.0);
        if let Some(slot) = self.slot.take() {
            queue(&slot, Box::new(move |env| resolve(env, deferred, value)));
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let deferred = Deferred(self.deferred.0);
            queue(&slot, Box::new(move |env| reject_panic(env, deferred)));
        }
    }
}

/// Rejects `deferred` for a call that ended without an answer.
fn reject_panic(env: sys::napi_env, deferred: Deferred) {
    let e = napi::Error::new(napi::Status::GenericFailure, "throttlekit: internal panic (please report)");
    // SAFETY: on the JS thread of `env` (jobs run in `call_js`); `deferred` is settled once.
    unsafe { sys::napi_reject_deferred(env, deferred.0, napi::JsError::from(e).into_value(env)) };
}

/// Settles `deferred` with `value`: resolved with its JS value, or rejected with the error its
/// conversion gives (our `Settled` turns a core error into our error object that way).
fn resolve<T: ToNapiValue>(env: sys::napi_env, deferred: Deferred, value: T) {
    // SAFETY: on the JS thread of `env` (jobs run in `call_js`); `deferred` is settled once.
    unsafe {
        match T::to_napi_value(env, value) {
            Ok(v) => sys::napi_resolve_deferred(env, deferred.0, v),
            Err(e) => sys::napi_reject_deferred(env, deferred.0, napi::JsError::from(e).into_value(env)),
        };
    }
}

/// Hands `job` to the JS thread; dropped if the environment is gone.
fn queue(slot: &Slot, job: Job) {
    let data = Box::into_raw(Box::new(job));
    let sent = match slot.0.lock() {
        // SAFETY: the function is alive while it is in the slot, and we hold the slot's lock.
        Ok(guard) => guard.as_ref().is_some_and(|t| unsafe {
            sys::napi_call_threadsafe_function(t.0, data.cast(), sys::ThreadsafeFunctionCallMode::nonblocking)
                == sys::Status::napi_ok
        }),
        Err(_) => false,
    };
    if !sent {
        // SAFETY: not handed to napi, so still ours.
        drop(unsafe { Box::from_raw(data) });
    }
}

/// This thread's channel for `env`, made on first use; `None` if the thread serves another env.
fn channel(env: sys::napi_env) -> napi::Result<Option<Arc<Slot>>> {
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        if let Some(l) = local.as_ref() {
            return Ok((l.env == env).then(|| l.slot.clone()));
        }
        // Tokio threads will run this image's code after this environment is gone; keep the
        // image mapped even if the package was loaded only in a worker that exits.
        napi::bindgen_prelude::retain_current_module_for_unload_safety();
        let mut name = ptr::null_mut();
        let mut tsfn = ptr::null_mut();
        // SAFETY: on the JS thread of `env`. No JS function: `call_js` does the work.
        unsafe {
            check(sys::napi_create_string_utf8(env, c"throttlekit".as_ptr(), 11, &mut name))?;
            check(sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                Some(call_js),
                &mut tsfn,
            ))?;
            check(sys::napi_unref_threadsafe_function(env, tsfn))?;
        }
        let slot = Arc::new(Slot(Mutex::new(Some(Tsfn(tsfn)))));
        let hook = Arc::into_raw(slot.clone()).cast_mut().cast();
        // SAFETY: registered after the function, so it runs before Node tears the function down.
        if let Err(e) = check(unsafe { sys::napi_add_env_cleanup_hook(env, Some(teardown), hook) }) {
            // SAFETY: the hook was not registered; take its reference back and stop using the
            // function (Node frees it at teardown).
            drop(unsafe { Arc::from_raw(hook.cast::<Slot>()) });
            return Err(e);
        }
        *local = Some(Local { env, tsfn, slot: slot.clone(), pending: Cell::new(0) });
        Ok(Some(slot))
    })
}

/// A call started: the first pending call keeps the event loop alive.
fn started(env: sys::napi_env) -> napi::Result<()> {
    LOCAL.with(|local| {
        let local = local.borrow();
        let Some(l) = local.as_ref() else { return Ok(()) };
        l.pending.set(l.pending.get() + 1);
        // SAFETY: on the JS thread of `env`, which owns the function.
        if l.pending.get() == 1 { check(unsafe { sys::napi_ref_threadsafe_function(env, l.tsfn) }) } else { Ok(()) }
    })
}

/// Runs a job on the JS thread; the last pending call lets the event loop exit again.
unsafe extern "C" fn call_js(env: sys::napi_env, _js_cb: sys::napi_value, _context: *mut c_void, data: *mut c_void) {
    // SAFETY: every item queued is a `Box<Job>` made by `queue`, handed over exactly once.
    let job = unsafe { Box::from_raw(data.cast::<Job>()) };
    if env.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| job(env)));
    LOCAL.with(|local| {
        if let Ok(local) = local.try_borrow()
            && let Some(l) = local.as_ref()
        {
            l.pending.set(l.pending.get().saturating_sub(1));
            if l.pending.get() == 0 {
                // SAFETY: on the JS thread of `env`, which owns the function.
                unsafe { sys::napi_unref_threadsafe_function(env, l.tsfn) };
            }
        }
    });
}

/// Environment teardown: no more calls into the function (Node frees it next).
unsafe extern "C" fn teardown(arg: *mut c_void) {
    // SAFETY: `arg` is the reference `channel` leaked for this hook, which runs once.
    let slot = unsafe { Arc::from_raw(arg.cast::<Slot>()) };
    if let Ok(mut t) = slot.0.lock() {
        t.take();
    }
    LOCAL.with(|local| {
        if let Ok(mut local) = local.try_borrow_mut() {
            local.take();
        }
    });
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok { Ok(()) } else { Err(napi::Error::from_status(napi::Status::from(status))) }
}
