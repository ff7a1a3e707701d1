//! The two-tier modes' arguments: `mode="leased", lease={"batch": 100, ...}`. Parsing and
//! validation are core's (`LeaseOptions::from_fields`, `Mode::parse`, the builder's check).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::IntoPyResult;
use crate::validate::{flag, option, string};

/// The `lease` dict's keys.
const FIELDS: [&str; 4] = ["batch", "low_water", "window_coupled", "max_keys"];

/// `mode` (`None`: strict) with the `lease` dict's options.
pub fn mode(mode: Option<&Bound<'_, PyAny>>, lease: Option<&Bound<'_, PyAny>>) -> PyResult<throttlekit::Mode> {
    let name = match mode.filter(|m| !m.is_none()) {
        Some(m) => string(m, "mode")?.to_owned(),
        None if lease.is_some_and(|l| !l.is_none()) => "leased".to_owned(),
        None => return Ok(throttlekit::Mode::Strict),
    };
    let options = match lease.filter(|l| !l.is_none()) {
        None => throttlekit::LeaseOptions::default(),
        Some(l) => {
            let d = l.cast::<PyDict>().map_err(|_| crate::error::wrong_type("lease", "a dict", l))?;
            for (k, _) in d.iter() {
                let k = string(&k, "lease")?;
                if !FIELDS.contains(&k) {
                    return Err(crate::error::config(&format!("lease.{k}"), "is not a lease option"));
                }
            }
            let num = |k: &str| -> PyResult<Option<f64>> {
                d.get_item(k)?.filter(|v| !v.is_none()).map(|v| option(&v, &format!("lease.{k}"))).transpose()
            };
            let coupled = d.get_item("window_coupled")?.filter(|v| !v.is_none());
            throttlekit::LeaseOptions::from_fields(
                num("batch")?,
                num("low_water")?,
                coupled.map(|v| flag(&v, "lease.window_coupled")).transpose()?,
                num("max_keys")?,
            )
            .py()?
        }
    };
    throttlekit::Mode::parse(&name, options).py()
}

/// `release_leases`' `idle_ms` argument: `None` gives back every key's credits.
pub fn idle(idle_ms: Option<&Bound<'_, PyAny>>) -> PyResult<Option<i64>> {
    idle_ms.filter(|v| !v.is_none()).map(|v| crate::validate::millis(v, "idle_ms")).transpose()
}

/// The tier's counters as a dict.
pub fn stats<'py>(py: Python<'py>, s: throttlekit::lease::TierStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("local_admits", s.local_admits)?;
    d.set_item("local_denials", s.local_denials)?;
    d.set_item("leases", s.leases)?;
    d.set_item("late_credits_dropped", s.late_credits_dropped)?;
    d.set_item("credits_returned", s.credits_returned)?;
    Ok(d)
}
