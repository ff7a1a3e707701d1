//! The `rust-axum` example server of `examples/http/run.sh`: `GET /healthz` (never limited) and
//! `GET /limited`, limited by client IP with GCRA 5 per 60 s, burst 5, `draft-10` fields,
//! policy name `default`, no trusted proxies.
//!
//! `cargo run -p throttlekit-tower --example axum_server -- PORT` (binds 127.0.0.1; set
//! `HOST` to listen elsewhere).

use std::net::SocketAddr;

use axum::Router;
use axum::routing::get;
use throttlekit::http::{Family, HeaderOptions};
use throttlekit::{Limiter, Strategy};
use throttlekit_tower::RateLimitLayer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::args().nth(1).ok_or("usage: axum_server PORT")?.parse()?;
    let host = std::env::var("HOST").unwrap_or_else(|_| "127.0.0.1".to_owned());

    let limiter = Limiter::new(Strategy::gcra(5, 60_000, Some(5))?);
    let layer = RateLimitLayer::new(limiter)
        .header_options(HeaderOptions { family: Family::Draft10, policy_name: "default".into(), ..Default::default() })?
        .skip(|parts| parts.uri.path() == "/healthz");
    let app =
        Router::new().route("/healthz", get(|| async { "ok" })).route("/limited", get(|| async { "ok" })).layer(layer);

    let listener = tokio::net::TcpListener::bind((host.as_str(), port)).await?;
    println!("rust-axum listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
    Ok(())
}
