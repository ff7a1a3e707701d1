//! The panic boundary: every export runs its body inside [`guard`], so a Rust panic becomes
//! `TK_RESULT_PANIC` instead of unwinding into C (undefined behaviour) or aborting the host.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::result::{set_last_error, tk_result};

/// Runs `body`, turning a panic into [`tk_result::Panic`] with the panic text as the last error.
///
/// `AssertUnwindSafe` is sound here because a panicking body never leaves a half-built object
/// behind for C to see: out-parameters are written only after everything else succeeded, and
/// the core's shared state (the memory store) is behind locks that do not poison.
pub(crate) fn guard(body: impl FnOnce() -> tk_result) -> tk_result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            set_last_error(&format!("panic: {}", throttlekit::panic_message(&*payload)));
            tk_result::Panic
        }
    }
}

/// [`guard`] for the `void` free functions: a panic while dropping is swallowed (there is no
/// status to report it through), but it never crosses the boundary.
pub(crate) fn guard_void(body: impl FnOnce()) {
    let _ = guard(|| {
        body();
        tk_result::Ok
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_result() {
        let r = guard(|| panic!("boom"));
        assert_eq!(r, tk_result::Panic);
    }
}
