//! `throttlekit serve`: an Envoy Rate Limit Service (gRPC `ShouldRateLimit`, HTTP `/json`)
//! reading envoyproxy/ratelimit's YAML, with every decision made by the throttlekit core.
//!
//! The service is a door like any binding: [`grpc`] and [`http`] convert requests, [`decide`]
//! matches descriptors ([`matching`]) against the [`config`] and hands every limit of a request
//! to core's multi apply in one call; core decides.

pub mod clock;
#[cfg(test)]
mod compat_tests;
pub mod config;
pub mod decide;
pub mod matching;

pub mod grpc;
pub mod http;
pub mod log;
pub mod metrics;
pub mod reload;
pub mod rls_server;
pub mod server;
pub mod state;
#[cfg(test)]
mod tests;
pub mod workers;

pub use server::{USAGE, run};
