//! The gRPC door: `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`, converting
//! the proto to [`RequestIn`] and core's outcome back. No decision is made here.

use std::sync::Arc;
use std::time::Duration;

use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{DescriptorStatus, RateLimit};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use envoy_types::pb::google::protobuf::Duration as PbDuration;
use tonic::{Request, Response, Status};

use crate::decide::{Code, DecideError, DescriptorIn, Outcome, RequestIn};
use crate::metrics::Door;
use crate::state::State;

/// The service.
pub struct Rls {
    /// Shared state.
    pub state: Arc<State>,
}

/// The proto request as the service's own.
pub fn request_in(r: RateLimitRequest) -> RequestIn {
    RequestIn {
        domain: r.domain,
        hits_addend: r.hits_addend,
        descriptors: r
            .descriptors
            .into_iter()
            .map(|d| DescriptorIn {
                entries: d.entries.into_iter().map(|e| (e.key, e.value)).collect(),
                limit_override: d.limit.map(|l| (l.requests_per_unit, l.unit)),
                hits_addend: d.hits_addend.map(|h| h.value),
                negative_hits: d.is_negative_hits,
            })
            .collect(),
    }
}

fn code(c: Code) -> i32 {
    match c {
        Code::Ok => 1,
        Code::OverLimit => 2,
    }
}

/// The outcome as the proto response.
pub fn response(o: Outcome) -> RateLimitResponse {
    RateLimitResponse {
        overall_code: code(o.overall),
        statuses: o
            .statuses
            .into_iter()
            .map(|s| DescriptorStatus {
                code: code(s.code),
                current_limit: s.current_limit.map(|l| RateLimit {
                    name: l.name,
                    requests_per_unit: l.requests_per_unit,
                    unit: l.unit.map_or(0, |u| u.proto()),
                }),
                limit_remaining: s.limit_remaining,
                duration_until_reset: s.duration_until_reset_s.map(|seconds| PbDuration { seconds, nanos: 0 }),
                ..Default::default()
            })
            .collect(),
        response_headers_to_add: o
            .headers
            .into_iter()
            .map(|(key, value)| HeaderValue { key, value, ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

/// A decision error as a gRPC status.
pub fn status(e: Option<DecideError>) -> Status {
    match e {
        None => Status::deadline_exceeded("no decision within the deadline"),
        Some(DecideError::Invalid(m)) => Status::invalid_argument(m),
        Some(DecideError::Unavailable(m)) => Status::unavailable(m),
        Some(DecideError::Internal(m)) => Status::internal(m),
    }
}

/// Parses a `grpc-timeout` header value (`100m`, `2S`): an integer and a unit.
pub fn grpc_timeout(v: &str) -> Option<Duration> {
    let (n, unit) = v.split_at(v.len().checked_sub(1)?);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[tonic::async_trait]
impl RateLimitService for Rls {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        crate::workers::note_request();
        let deadline = request.metadata().get("grpc-timeout").and_then(|v| v.to_str().ok()).and_then(grpc_timeout);
        let req = request_in(request.into_inner());
        match self.state.decide(Door::Grpc, &req, deadline).await {
            Ok(o) => Ok(Response::new(response(o))),
            Err(e) => Err(status(e)),
        }
    }
}
