//! The throttlekit core as WebAssembly (wasm-bindgen): the memory path of `@throttlekit/core`
//! (`Limiter`, `MultiLimiter`, `Strategy`, `MemoryStore`, `ManualClock`), the Redis REST store
//! and the HTTP edge under the fetch and Hono middleware (`http`) for runtimes that
//! cannot load the native addon — Cloudflare Workers, Deno, Bun, browsers — and for Node when
//! asked (`@throttlekit/core/wasm`).
//!
//! An adapter and nothing more, module for module the Node binding's (bindings-node/src): every
//! class converts JavaScript arguments (`convert`), calls the core's public API and converts the
//! result back, with the same `config_invalid` messages. Time is the host's: without a
//! `ManualClock` a limiter reads `Date.now()` in JavaScript (`clock::HostClock`), never the
//! module's own clock (wasm32-unknown-unknown has none). Nothing here computes a decision.
//!
//! Nothing may panic: the module is built with `panic = "abort"`, where a panic is a trap that
//! leaves the instance unusable. Every fallible step returns a `config_invalid` instead.
//!
//! Only for wasm32; on a native target the crate is empty.
#![cfg(target_arch = "wasm32")]
#![deny(clippy::unwrap_used)]
// `fast::tk_limiter` is compiled for speed in a module built for size (build.sh always builds
// with RUSTC_BOOTSTRAP=1).
#![cfg_attr(target_arch = "wasm32", feature(optimize_attribute))]

mod clock;
mod convert;
mod error;
mod fast;
mod heap;
mod held;
mod http;
mod instance;
mod limiter;
mod multi;
mod rest;
mod shaper;
mod store;
mod strategy;

use wasm_bindgen::prelude::wasm_bindgen;

/// The version of the core (the package version, too).
#[wasm_bindgen]
pub fn version() -> String {
    throttlekit::VERSION.to_owned()
}

/// Every stable error `code`, in the core's order.
#[wasm_bindgen(js_name = errorCodes)]
pub fn error_codes() -> Vec<String> {
    throttlekit::ErrorCode::ALL.iter().map(|c| c.as_str().to_owned()).collect()
}
