//! The algorithms, one per file, each with its validated parameters and its pure transition.
//!
//! Every transition has the shape `check(slot, now, cost, commit) -> Step`: it reads the key's
//! state, decides, and — only when the request is allowed and `commit` is true — writes the new
//! state in place. With `commit == false` it is a forecast: the same decision, nothing written.
//! A denied request never writes, so `remaining` stays meaningful across repeated denials.

pub mod calendar;
pub mod fixed_window;
pub mod gcra;
pub mod leaky_bucket;
pub(crate) mod period_counter;
pub mod quota;
pub mod sliding_window;
pub mod sliding_window_log;
pub mod token_bucket;
