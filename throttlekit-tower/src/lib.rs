//! # throttlekit-tower
//!
//! A tower [`Layer`](tower_layer::Layer) that rate-limits HTTP requests with a throttlekit
//! [`Limiter`](throttlekit::Limiter) or [`MultiLimiter`](throttlekit::MultiLimiter): it works
//! with axum and bare hyper (both tested), and any other tower stack such as tonic.
//!
//! Every decision, header line, client key and problem body comes from core's `throttlekit::http`,
//! so this crate is a thin adapter: it extracts the request's key, awaits the async check (no
//! blocking on Redis), and either forwards the request with the rate-limit fields added to the
//! response, or answers `429 Too Many Requests` with an RFC 9457 `application/problem+json` body.
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use axum::{Router, routing::get};
//! use throttlekit::{Limiter, Strategy};
//! use throttlekit_tower::RateLimitLayer;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let limiter = Limiter::new(Strategy::gcra(5, 60_000, Some(5))?);
//! let app = Router::new()
//!     .route("/limited", get(|| async { "ok" }))
//!     .layer(RateLimitLayer::new(limiter));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! // The default key is the client IP, read from the socket peer:
//! axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
//! # Ok(()) }
//! ```
//!
//! [`AdaptiveLayer`] sheds load instead: it admits a request only while fewer than core's
//! adaptive concurrency limit are in flight, and answers `503` with `Retry-After` otherwise
//! (`docs/adaptive.md`).
//!
//! `docs/http.md` in the repository describes the fields; `docs/http-rust.md` this layer's options,
//! its tests, and why it is a separate crate.
#![warn(missing_docs)]

mod adaptive;
mod body;
mod config;
mod peer;
mod service;

pub use adaptive::{AdaptiveLayer, AdaptiveService};
pub use body::ResponseBody;
pub use config::{LimitedEvent, RateLimitLayer};
pub use service::RateLimitService;

/// `docs/http-rust.md`'s Rust code blocks compile and run as doctests, so the documentation cannot rot.
#[doc = include_str!("../../docs/http-rust.md")]
#[cfg(doctest)]
pub struct HttpDocDoctests;
