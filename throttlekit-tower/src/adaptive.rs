//! [`AdaptiveLayer`]: load shedding with core's adaptive concurrency limiter.
//!
//! Each request takes a permit from a [`throttlekit::concurrency::AdaptiveLimiter`] (or waits
//! for one, if the layer is given a wait); a refused request is answered `503 Service
//! Unavailable` with `Retry-After` from core's rejection, and never reaches the inner service. The
//! permit is released when the inner service returns the response head: `503` and `504` from
//! below, or an error, are `dropped` (a congestion signal), anything else `success`; a request
//! whose future is dropped (the client went away) releases as `ignore`. Round trips are measured
//! by core on its monotonic clock.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderValue, Request, Response, StatusCode, header};
use throttlekit::concurrency::{AdaptiveLimiter, Admission, Outcome, Rejection};
use tower_layer::Layer;
use tower_service::Service;

use crate::body::ResponseBody;
use crate::service::{BoxFuture, take_ready};

type PartitionFn = dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync;

/// A tower layer that sheds load with an adaptive concurrency limit.
#[derive(Clone)]
pub struct AdaptiveLayer {
    limiter: AdaptiveLimiter,
    partition: Option<Arc<PartitionFn>>,
    wait: Option<Duration>,
}

impl AdaptiveLayer {
    /// Sheds with `limiter`, refusing at once when it is full.
    pub fn new(limiter: AdaptiveLimiter) -> AdaptiveLayer {
        AdaptiveLayer { limiter, partition: None, wait: None }
    }

    /// Names each request's partition (`None`: no partition). An unknown name is answered `500`:
    /// it is a configuration mistake, not load.
    pub fn partition(mut self, f: impl Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static) -> Self {
        self.partition = Some(Arc::new(f));
        self
    }

    /// Waits up to `timeout` for a permit (in the limiter's FIFO or LIFO order) before shedding.
    pub fn wait(mut self, timeout: Duration) -> Self {
        self.wait = Some(timeout);
        self
    }
}

impl<S> Layer<S> for AdaptiveLayer {
    type Service = AdaptiveService<S>;

    fn layer(&self, inner: S) -> AdaptiveService<S> {
        AdaptiveService { inner, layer: self.clone() }
    }
}

/// The shedding service around `S`.
#[derive(Clone)]
pub struct AdaptiveService<S> {
    inner: S,
    layer: AdaptiveLayer,
}

/// The answer to a refused request: 503 with `Retry-After` (whole seconds, from core).
fn shed<B>(r: &Rejection) -> Response<ResponseBody<B>> {
    let mut response = Response::new(ResponseBody::full(""));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(r.retry_after_secs()));
    response
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for AdaptiveService<S>
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
        let layer = self.layer.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let partition = layer.partition.as_ref().and_then(|f| f(&parts));
            let admission = match layer.wait {
                None => layer.limiter.try_acquire(partition.as_deref()),
                Some(t) => layer.limiter.acquire(partition.as_deref(), t).await,
            };
            let permit = match admission {
                Ok(Admission::Granted(p)) => p.guard(),
                Ok(Admission::Rejected(r)) => return Ok(shed(&r)),
                Err(_) => {
                    let mut response = Response::new(ResponseBody::full(""));
                    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                    return Ok(response);
                }
            };
            match inner.call(Request::from_parts(parts, body)).await {
                Ok(response) => {
                    let status = response.status();
                    if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::GATEWAY_TIMEOUT {
                        permit.release(Outcome::Dropped);
                    } else {
                        permit.release(Outcome::Success);
                    }
                    Ok(response.map(|body| ResponseBody::Inner { body }))
                }
                Err(e) => {
                    permit.release(Outcome::Dropped);
                    Err(e)
                }
            }
        })
    }
}
