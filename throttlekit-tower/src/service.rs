//! The service the layer wraps around an inner one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use crate::body::ResponseBody;
use crate::config::{Config, RateLimitLayer, Verdict, add_lines};

/// The rate-limiting service around `S`.
#[derive(Clone)]
pub struct RateLimitService<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> RateLimitService<S> {
        RateLimitService { inner, config: self.config.clone() }
    }
}

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The service that was polled ready, leaving a fresh clone in its place: the clone that was
/// polled ready serves this request (tower's usual swap).
pub(crate) fn take_ready<S: Clone>(inner: &mut S) -> S {
    let clone = inner.clone();
    std::mem::replace(inner, clone)
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RateLimitService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let mut inner = take_ready(&mut self.inner);
        let config = self.config.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let lines = if config.skips(&parts) {
                Vec::new()
            } else {
                match config.decide(&parts).await {
                    Verdict::Forward(lines) => lines,
                    Verdict::Answer(response) => return Ok(response.map(ResponseBody::full)),
                }
            };
            let mut response = inner.call(Request::from_parts(parts, body)).await?;
            add_lines(response.headers_mut(), &lines);
            Ok(response.map(|body| ResponseBody::Inner { body }))
        })
    }
}
