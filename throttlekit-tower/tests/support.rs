//! Test helpers: an axum app served on a free loopback port, and a real hyper client.
#![allow(dead_code)]

use std::net::SocketAddr;

use axum::Router;
use axum::routing;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use throttlekit_tower::RateLimitLayer;

/// `/limited` and `/healthz` (skipped) behind `layer`, served with the peer's address.
pub async fn serve(layer: RateLimitLayer) -> SocketAddr {
    serve_router(app(layer), true).await
}

pub fn app(layer: RateLimitLayer) -> Router {
    Router::new()
        .route("/limited", routing::get(|| async { "ok" }))
        .route("/healthz", routing::get(|| async { "healthy" }))
        .layer(layer.skip(|parts| parts.uri.path() == "/healthz"))
}

pub async fn serve_router(router: Router, connect_info: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        if connect_info {
            axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
        } else {
            axum::serve(listener, router).await.unwrap();
        }
    });
    addr
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// The rate-limit lines (and Retry-After) as `name: value`, lowercase names, in order.
    pub fn rate_lines(&self) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n.as_str().contains("ratelimit") || n.as_str() == "retry-after")
            .map(|(n, v)| format!("{}: {}", n, v.to_str().unwrap()))
            .collect()
    }
}

pub async fn get_with(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    let client: Client<HttpConnector, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut req = Request::get(format!("http://{addr}{path}"));
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    let resp = client.request(req.body(Empty::new()).unwrap()).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    Reply { status, headers, body }
}

pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    get_with(addr, path, &[]).await
}
