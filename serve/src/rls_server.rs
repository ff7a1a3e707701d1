//! The `RateLimitService` as a tonic service, as envoy-types' generated `RateLimitServiceServer`
//! is, but with a codec whose buffers fit a rate-limit call.
//!
//! Why not the generated server: it builds `tonic_prost::ProstCodec::default()`, whose encoder
//! and decoder ask for 8 KiB buffers, and tonic allocates the encoder's for every response (and
//! the decoder's for every request) although a `RateLimitResponse` is tens of bytes. An 8 KiB
//! `malloc` is outside glibc's per-thread cache and makes it consolidate its fast bins on each
//! call: under `perf` on serve at 64 streams on Redis, `BytesMut::with_capacity` in tonic's
//! `EncodedBytes::new` alone was 7.3% of serve's samples. A buffer of [`BUFFER_BYTES`] still
//! grows when a response is larger (many `response_headers_to_add`, many descriptors); tonic
//! only reserves more as it writes. Everything else (routing by path, the unary handling, the
//! decoding size limit, no compression) is what the generated server does.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use tonic::codec::{BufferSettings, Codec};
use tonic::codegen::{Body, BoxFuture, Service, StdError, http};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// The one method's path.
const SHOULD_RATE_LIMIT: &str = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

/// The codec's starting buffer: a response with a few statuses and headers fits without growing.
pub const BUFFER_BYTES: usize = 512;

/// Prost encoding with [`BUFFER_BYTES`] buffers (tonic's default yield threshold).
#[derive(Clone, Copy, Debug, Default)]
pub struct SmallCodec;

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER_BYTES, 32 * 1024)
}

impl Codec for SmallCodec {
    type Encode = RateLimitResponse;
    type Decode = RateLimitRequest;
    type Encoder = ProstEncoder<RateLimitResponse>;
    type Decoder = ProstDecoder<RateLimitRequest>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<RateLimitResponse, RateLimitRequest>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<RateLimitResponse, RateLimitRequest>::raw_decoder(settings())
    }
}

/// `envoy.service.ratelimit.v3.RateLimitService` served by `T`.
pub struct RlsServer<T> {
    inner: Arc<T>,
    max_decoding: Option<usize>,
}

impl<T> RlsServer<T> {
    /// The service around `inner`.
    pub fn new(inner: T) -> Self {
        Self { inner: Arc::new(inner), max_decoding: None }
    }

    /// Refuses requests larger than `limit` bytes (tonic's default: 4 MB).
    #[must_use]
    pub fn max_decoding_message_size(mut self, limit: usize) -> Self {
        self.max_decoding = Some(limit);
        self
    }
}

impl<T> Clone for RlsServer<T> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), max_decoding: self.max_decoding }
    }
}

impl<T> tonic::server::NamedService for RlsServer<T> {
    const NAME: &'static str = "envoy.service.ratelimit.v3.RateLimitService";
}

/// The unary method, as tonic's `Grpc::unary` calls it.
struct Method<T>(Arc<T>);

impl<T: RateLimitService> tonic::server::UnaryService<RateLimitRequest> for Method<T> {
    type Response = RateLimitResponse;
    type Future = BoxFuture<tonic::Response<RateLimitResponse>, tonic::Status>;

    fn call(&mut self, request: tonic::Request<RateLimitRequest>) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move { inner.should_rate_limit(request).await })
    }
}

impl<T, B> Service<http::Request<B>> for RlsServer<T>
where
    T: RateLimitService,
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() != SHOULD_RATE_LIMIT {
            return Box::pin(async { Ok(tonic::Status::unimplemented("").into_http()) });
        }
        let (inner, max_decoding) = (self.inner.clone(), self.max_decoding);
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(SmallCodec).apply_max_message_size_config(max_decoding, None);
            Ok(grpc.unary(Method(inner), req).await)
        })
    }
}
