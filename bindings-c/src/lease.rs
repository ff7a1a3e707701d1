//! A limiter's two-tier mode (core's `Mode`, docs/leasing.md): `tk_mode`, `tk_lease_options`,
//! `tk_tier_stats`, and the calls that read the tier and give its credits back.
//!
//! The mode is chosen in `tk_limiter_config` (`mode`, `lease`); every check of the limiter then
//! goes through core's tier. Nothing here decides: the options are copied into core's
//! `LeaseOptions` and core's builder validates them (`TK_RESULT_CONFIG_INVALID` naming the
//! field, e.g. `lease.batch` for a batch of 0).

use throttlekit::lease::TierStats;
use throttlekit::{LeaseOptions, Mode, Result as CoreResult};

use crate::args::{borrow, get, try_arg};
use crate::limiter::tk_limiter;
use crate::panic::guard;
use crate::result::{set_last_error, tk_result, write_out};

/// A limiter's two-tier mode (`tk_limiter_config.mode`, passed as a `uint32_t` so that an
/// out-of-range number is an error, not undefined behaviour).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_mode {
    /// Every decision is one store call (the default).
    Strict = 0,
    /// A denial is kept until its `retry_after_ms` and answered without the store; exact.
    CachedDeny = 1,
    /// Units are leased `batch` at a time and spent locally; over-admits at most
    /// `N·(batch − 1)` for N processes, nothing with `window_coupled` (docs/leasing.md).
    Leased = 2,
}

/// Reads `tk_limiter_config.mode`.
fn mode_of(n: u32) -> Result<tk_mode, tk_result> {
    [tk_mode::Strict, tk_mode::CachedDeny, tk_mode::Leased].into_iter().find(|m| *m as u32 == n).ok_or_else(|| {
        set_last_error(&format!("config_invalid: mode {n} is not a tk_mode"));
        tk_result::ConfigInvalid
    })
}

/// The leased and cached-deny modes' options. Start from `tk_lease_options_default()` and set
/// what you need: every field is taken as given, so a zeroed struct is refused (`batch` 0).
///
/// Ownership: caller-owned; read only during `tk_limiter_new`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct tk_lease_options {
    /// Units asked for per lease, the asking request's included: 1..=2^53 (default 100).
    pub batch: u64,
    /// A spend that leaves this many credits or fewer also tops them up; below `batch`
    /// (default 0: only when they run out).
    pub low_water: u64,
    /// Credits expire at the fixed window's (or quota period's) reset: exactly `limit` per
    /// window. Fixed window and fixed/calendar quotas only (default false).
    pub window_coupled: bool,
    /// Keys the tier remembers (credits or a cached denial), at least 1 (default 10000). The
    /// only field `TK_MODE_CACHED_DENY` reads.
    pub max_keys: usize,
}

impl From<LeaseOptions> for tk_lease_options {
    fn from(o: LeaseOptions) -> Self {
        tk_lease_options {
            batch: o.batch,
            low_water: o.low_water,
            window_coupled: o.window_coupled,
            max_keys: o.max_keys,
        }
    }
}

/// Core's default lease options (batch 100, low_water 0, not coupled, 10000 keys). Never fails.
#[unsafe(no_mangle)]
pub extern "C" fn tk_lease_options_default() -> tk_lease_options {
    // Copies constants: cannot panic, so no boundary is needed.
    LeaseOptions::default().into()
}

/// The core mode for a config's `mode` number and `lease` pointer (NULL: core's defaults).
/// Options given with `TK_MODE_STRICT` are refused rather than silently ignored.
///
/// # Safety
/// `lease` must be NULL or point to a valid `tk_lease_options`.
pub(crate) unsafe fn mode(n: u32, lease: *const tk_lease_options) -> Result<Mode, tk_result> {
    let lease = unsafe { lease.as_ref() };
    let o = match lease {
        Some(l) => LeaseOptions {
            batch: l.batch,
            low_water: l.low_water,
            window_coupled: l.window_coupled,
            max_keys: l.max_keys,
        },
        None => LeaseOptions::default(),
    };
    Ok(match mode_of(n)? {
        tk_mode::Strict if lease.is_some() => {
            set_last_error("config_invalid: lease options need mode TK_MODE_LEASED or TK_MODE_CACHED_DENY");
            return Err(tk_result::ConfigInvalid);
        }
        tk_mode::Strict => Mode::Strict,
        tk_mode::CachedDeny => Mode::CachedDeny { max_keys: o.max_keys },
        tk_mode::Leased => Mode::Leased(o),
    })
}

/// The limiter's local tier counters, cumulative since it was made (all zero in strict mode).
/// Caller-owned; filled by `tk_limiter_tier_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_tier_stats {
    /// Requests admitted from local credits (no store call).
    pub local_admits: u64,
    /// Requests denied from a cached denial (no store call).
    pub local_denials: u64,
    /// Leases sent to the store (one store call each).
    pub leases: u64,
    /// Credits dropped because their grant arrived after its expiry.
    pub late_credits_dropped: u64,
    /// Credits given back to the store.
    pub credits_returned: u64,
}

/// `tk_limiter_release_leases`'s `idle_ms` for "every key, however recently used" (as on
/// shutdown); any negative number means the same.
pub const TK_RELEASE_ALL_KEYS: i64 = -1;

/// The `tk_mode` number of a core mode (shared by the limiter and the multi limiter).
pub(crate) fn mode_number(m: Mode) -> u32 {
    (match m {
        Mode::Strict => tk_mode::Strict,
        Mode::CachedDeny { .. } => tk_mode::CachedDeny,
        Mode::Leased(_) => tk_mode::Leased,
    }) as u32
}

impl From<TierStats> for tk_tier_stats {
    fn from(s: TierStats) -> Self {
        tk_tier_stats {
            local_admits: s.local_admits,
            local_denials: s.local_denials,
            leases: s.leases,
            late_credits_dropped: s.late_credits_dropped,
            credits_returned: s.credits_returned,
        }
    }
}

/// The `idle_ms` of the release exports as core's (negative: every key).
pub(crate) fn idle(idle_ms: i64) -> Option<i64> {
    (idle_ms >= 0).then_some(idle_ms)
}

/// Writes a release's units into `out_units` (nullable) when it succeeded; its `tk_result`.
///
/// # Safety
/// `out_units` must be NULL or valid for writes.
pub(crate) unsafe fn write_released(released: CoreResult<u64>, out_units: *mut u64) -> tk_result {
    let mut units = 0;
    let r = write_out(released, &mut units);
    if let Some(o) = unsafe { out_units.as_mut() }
        && r == tk_result::Ok
    {
        *o = units;
    }
    r
}

/// Writes the limiter's `tk_mode` number into `out_mode`.
///
/// # Safety
/// `limiter` must be a live handle; `out_mode` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_mode(limiter: *const tk_limiter, out_mode: *mut u32) -> tk_result {
    unsafe { get(limiter, "limiter", out_mode, "out_mode", |l| mode_number(l.inner.mode())) }
}

/// Copies the limiter's tier counters into `out_stats`.
///
/// # Safety
/// `limiter` must be a live handle; `out_stats` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_tier_stats(limiter: *const tk_limiter, out_stats: *mut tk_tier_stats) -> tk_result {
    unsafe { get(limiter, "limiter", out_stats, "out_stats", |l| l.inner.tier_stats().into()) }
}

/// Gives back the unspent leased credits of keys unused for `idle_ms` (negative, e.g.
/// `TK_RELEASE_ALL_KEYS`: every key) where the strategy can take them back, and writes the
/// units taken back into `out_units` (nullable). Call it with `TK_RELEASE_ALL_KEYS` before
/// `tk_limiter_free` (which does no I/O), or now and then with an idle time. 0 in strict mode.
/// Blocks for one store call per key given back; `TK_RESULT_STORE_UNAVAILABLE` when one fails.
///
/// # Safety
/// `limiter` must be a live handle; `out_units` NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_limiter_release_leases(
    limiter: *const tk_limiter,
    idle_ms: i64,
    out_units: *mut u64,
) -> tk_result {
    guard(|| {
        let l = try_arg!(unsafe { borrow(limiter, "limiter") });
        unsafe { write_released(l.inner.release_leases_sync(idle(idle_ms)), out_units) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_modes_and_strict_with_options_are_refused() {
        let d = tk_lease_options_default();
        assert_eq!(unsafe { mode(3, std::ptr::null()) }.unwrap_err(), tk_result::ConfigInvalid);
        assert_eq!(unsafe { mode(tk_mode::Strict as u32, &d) }.unwrap_err(), tk_result::ConfigInvalid);
        assert_eq!(unsafe { mode(tk_mode::Strict as u32, std::ptr::null()) }.unwrap(), Mode::Strict);
        assert_eq!(
            unsafe { mode(tk_mode::Leased as u32, std::ptr::null()) }.unwrap(),
            Mode::Leased(LeaseOptions::default())
        );
        let few = tk_lease_options { max_keys: 7, ..d };
        assert_eq!(unsafe { mode(tk_mode::CachedDeny as u32, &few) }.unwrap(), Mode::CachedDeny { max_keys: 7 });
    }

    #[test]
    fn the_defaults_are_cores() {
        let d = tk_lease_options_default();
        let core = LeaseOptions::default();
        assert_eq!(
            (d.batch, d.low_water, d.window_coupled, d.max_keys),
            (core.batch, core.low_water, core.window_coupled, core.max_keys)
        );
    }
}
