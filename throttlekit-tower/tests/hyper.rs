//! The layer around a plain tower service on a bare hyper server (no axum): the server loop
//! inserts the peer as a `SocketAddr` extension, which the default key reads.

mod support;

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use throttlekit::{Limiter, ManualClock, Strategy};
use throttlekit_tower::RateLimitLayer;
use tower_layer::Layer;
use tower_service::Service;

/// Answers "ok" to everything.
#[derive(Clone)]
struct Hello;

impl Service<Request<Incoming>> for Hello {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<Incoming>) -> Self::Future {
        ready(Ok(Response::new(Full::new(Bytes::from_static(b"ok")))))
    }
}

/// Inserts the connection's peer address into every request, as a hyper server loop can.
#[derive(Clone)]
struct WithPeer<S> {
    peer: SocketAddr,
    inner: S,
}

impl<S: Service<Request<Incoming>>> Service<Request<Incoming>> for WithPeer<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Incoming>) -> S::Future {
        request.extensions_mut().insert(self.peer);
        self.inner.call(request)
    }
}

#[tokio::test]
async fn a_bare_hyper_server_is_limited_by_peer() {
    // A manual clock: no window boundary can fall between the requests.
    let clock = ManualClock::new(1_700_000_000_000);
    let limiter = Limiter::builder(Strategy::fixed_window(2, 60_000).unwrap()).clock(Arc::new(clock)).build();
    let layer = RateLimitLayer::new(limiter);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, peer) = listener.accept().await.unwrap();
            let service = TowerToHyperService::new(WithPeer { peer, inner: layer.layer(Hello) });
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service));
        }
    });
    let first = support::get(addr, "/").await;
    assert_eq!(first.status, 200);
    assert_eq!(first.body, "ok");
    assert_eq!(first.header("ratelimit"), Some("\"default\";r=1;t=40"));
    assert_eq!(support::get(addr, "/").await.status, 200);
    let denied = support::get(addr, "/").await;
    assert_eq!(denied.status, 429);
    assert_eq!(denied.header("content-type"), Some("application/problem+json"));
}
