//! The HTTP door: `POST /json` (envoyproxy/ratelimit's protojson request and response, 200 or
//! 429), `/healthcheck`, Prometheus `/metrics`, and a small JSON API (`GET /api/config`,
//! `POST /api/reload`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State as AxState};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::decide::{Code, DecideError, DescriptorIn, Outcome, RequestIn};
use crate::metrics::Door;
use crate::state::State;

/// The HTTP state: the shared state and whether the service is shutting down.
#[derive(Clone)]
pub struct Http {
    /// Shared state.
    pub state: Arc<State>,
    /// Set on SIGTERM: `/healthcheck` answers 500 so load balancers drain us first.
    pub draining: Arc<AtomicBool>,
}

/// The router. Bodies are capped at `max_body` bytes (413 past it).
pub fn router(http: Http, max_body: usize) -> Router {
    Router::new()
        .route("/json", post(json_check))
        .route("/healthcheck", get(healthcheck))
        .route("/metrics", get(metrics))
        .route("/api/config", get(api_config))
        .route("/api/reload", post(api_reload))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(http)
}

/// protojson accepts both the JSON name and the proto field name; numbers may be strings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRequest {
    #[serde(default)]
    domain: String,
    #[serde(default)]
    descriptors: Vec<JsonDescriptor>,
    #[serde(default, alias = "hits_addend")]
    #[serde(rename = "hitsAddend")]
    hits_addend: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonDescriptor {
    #[serde(default)]
    entries: Vec<JsonEntry>,
    #[serde(default)]
    limit: Option<JsonOverride>,
    #[serde(default, alias = "hits_addend", rename = "hitsAddend")]
    hits_addend: Option<Value>,
    #[serde(default, alias = "is_negative_hits", rename = "isNegativeHits")]
    is_negative_hits: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonEntry {
    #[serde(default)]
    key: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonOverride {
    #[serde(default, alias = "requests_per_unit", rename = "requestsPerUnit")]
    requests_per_unit: Option<Value>,
    #[serde(default)]
    unit: Option<Value>,
}

fn uint(v: &Option<Value>, what: &str) -> Result<Option<u64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or(format!("{what} must be a non-negative integer")),
        Some(Value::String(s)) => s.parse().map(Some).map_err(|_| format!("{what} must be a non-negative integer")),
        Some(_) => Err(format!("{what} must be a non-negative integer")),
    }
}

fn unit_number(v: &Option<Value>) -> Result<i32, String> {
    match v {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n.as_i64().map(|n| n as i32).ok_or("limit.unit must be a unit".into()),
        Some(Value::String(s)) => crate::config::Unit::parse(s).map(|u| u.proto()).ok_or(format!("unknown unit {s:?}")),
        Some(_) => Err("limit.unit must be a unit".into()),
    }
}

fn request_in(body: &[u8]) -> Result<RequestIn, String> {
    let r: JsonRequest = serde_json::from_slice(body).map_err(|e| format!("invalid request body: {e}"))?;
    let hits = uint(&r.hits_addend, "hitsAddend")?.unwrap_or(0);
    let mut descriptors = Vec::with_capacity(r.descriptors.len());
    for (i, d) in r.descriptors.into_iter().enumerate() {
        let limit_override = match &d.limit {
            Some(l) => Some((
                u32::try_from(uint(&l.requests_per_unit, "limit.requestsPerUnit")?.unwrap_or(0))
                    .map_err(|_| format!("descriptors[{i}].limit.requestsPerUnit is too large"))?,
                unit_number(&l.unit)?,
            )),
            None => None,
        };
        descriptors.push(DescriptorIn {
            entries: d.entries.into_iter().map(|e| (e.key, e.value)).collect(),
            limit_override,
            hits_addend: uint(&d.hits_addend, "hitsAddend")?,
            negative_hits: d.is_negative_hits,
        });
    }
    Ok(RequestIn { domain: r.domain, descriptors, hits_addend: u32::try_from(hits).unwrap_or(u32::MAX) })
}

fn code_name(c: Code) -> &'static str {
    match c {
        Code::Ok => "OK",
        Code::OverLimit => "OVER_LIMIT",
    }
}

/// The outcome in protojson (default values omitted, as protojson does).
pub fn outcome_json(o: &Outcome) -> Value {
    let statuses: Vec<Value> = o
        .statuses
        .iter()
        .map(|s| {
            let mut v = json!({"code": code_name(s.code)});
            if let Some(l) = &s.current_limit {
                let mut cl =
                    json!({"requestsPerUnit": l.requests_per_unit, "unit": l.unit.map_or("UNKNOWN", |u| u.name())});
                if !l.name.is_empty() {
                    cl["name"] = json!(l.name);
                }
                v["currentLimit"] = cl;
            }
            if s.limit_remaining > 0 {
                v["limitRemaining"] = json!(s.limit_remaining);
            }
            if let Some(seconds) = s.duration_until_reset_s {
                // protojson's Duration of whole seconds.
                v["durationUntilReset"] = json!(format!("{seconds}s"));
            }
            v
        })
        .collect();
    let mut out = json!({"overallCode": code_name(o.overall), "statuses": statuses});
    if !o.headers.is_empty() {
        out["responseHeadersToAdd"] =
            o.headers.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>().into();
    }
    out
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json!({"code": code, "message": message}).to_string())
        .into_response()
}

async fn json_check(AxState(h): AxState<Http>, body: Bytes) -> Response {
    let req = match request_in(&body) {
        Ok(r) => r,
        Err(m) => return error(StatusCode::BAD_REQUEST, "invalid_argument", &m),
    };
    match h.state.decide(Door::Http, &req, None).await {
        Ok(o) => {
            let status = if o.overall == Code::OverLimit { StatusCode::TOO_MANY_REQUESTS } else { StatusCode::OK };
            (status, [(header::CONTENT_TYPE, "application/json")], outcome_json(&o).to_string()).into_response()
        }
        Err(None) => error(StatusCode::GATEWAY_TIMEOUT, "deadline_exceeded", "no decision within the deadline"),
        Err(Some(DecideError::Invalid(m))) => error(StatusCode::BAD_REQUEST, "invalid_argument", &m),
        Err(Some(DecideError::Unavailable(m))) => error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", &m),
        Err(Some(DecideError::Internal(m))) => error(StatusCode::INTERNAL_SERVER_ERROR, "internal", &m),
    }
}

async fn healthcheck(AxState(h): AxState<Http>) -> Response {
    if h.draining.load(Ordering::Relaxed) {
        (StatusCode::INTERNAL_SERVER_ERROR, "shutting down").into_response()
    } else {
        (StatusCode::OK, "OK").into_response()
    }
}

async fn metrics(AxState(h): AxState<Http>) -> Response {
    let generation = h.state.status.lock().map(|s| s.generation).unwrap_or(0);
    let body = h.state.metrics.render(h.state.config().limit_count(), generation);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

fn config_json(state: &State) -> Value {
    let config = state.config();
    let status = state.status.lock().map(|s| s.clone()).unwrap_or_default();
    let mut domains: Vec<&String> = config.domains.keys().collect();
    domains.sort();
    json!({
        "path": state.config_path.display().to_string(),
        "files": config.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
        "domains": domains,
        "limits": config.limit_count(),
        "generation": status.generation,
        "loadedAtMs": status.loaded_at_ms,
        "lastError": status.last_error,
    })
}

async fn api_config(AxState(h): AxState<Http>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], config_json(&h.state).to_string()).into_response()
}

async fn api_reload(AxState(h): AxState<Http>) -> Response {
    let state = h.state.clone();
    let result = tokio::task::spawn_blocking(move || state.reload()).await;
    let status = match result {
        Ok(Ok(())) => StatusCode::OK,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    };
    (status, [(header::CONTENT_TYPE, "application/json")], config_json(&h.state).to_string()).into_response()
}
