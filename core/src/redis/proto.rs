//! The Redis module's protocol half, alone: what the `rest` feature builds without `redis`
//! (for wasm32, where there is no socket and no tokio I/O). The same files as `mod.rs`
//! declares, so the scripts, the engine and the REST mapping are one copy whichever feature
//! builds them; the store, its connections and the binding transport stay out.
// Helpers that only the native store calls are unused here.
#![allow(dead_code)]

mod call;
mod counts;
mod engine;
mod float_text;
mod lua_min;
pub mod prepared;
mod replay;
pub mod rest;
mod script_shas;
pub mod scripts;
