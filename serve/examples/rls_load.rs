//! A load generator for `throttlekit serve`: `ShouldRateLimit` over one HTTP/2 connection with
//! N concurrent streams (as Envoy multiplexes its calls), for a fixed time.
//!
//! `rls_load ADDR STREAMS DESCRIPTORS SECONDS` prints one line:
//! `ROW serve streams=N descriptors=D requests=R rps=X p50_us=Y p99_us=Z errors=E over=O sent=S`
//! (`sent` also counts the 300 ms warm-up's calls, which `requests` leaves out).
//! The domain is `bench`; descriptor i is `[("d{i}", "user-{n % 1000}")]`.
//!
//! `rls_load --grpc-body DESCRIPTORS PATH` writes one such request (user-1) as a gRPC message
//! body (the 5-byte frame prefix, then the protobuf) for `h2load -d PATH`.
//!
//! `rls_load --empty` is the floor to measure against: a tonic server of the same service, with
//! the same transport settings as `throttlekit serve`, that answers OK to every request without
//! deciding anything. It prints `listening ADDR` (a loopback port of its own) and serves until
//! killed.

use std::time::{Duration, Instant};

/// The `throttlekit` binary's allocator (cli/src/main.rs), so the empty service's floor is
/// measured on the same one.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::Entry;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::DescriptorStatus;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitService;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};

/// The empty service: one OK status per descriptor, nothing decided.
struct Empty;

#[tonic::async_trait]
impl RateLimitService for Empty {
    async fn should_rate_limit(
        &self,
        request: tonic::Request<RateLimitRequest>,
    ) -> Result<tonic::Response<RateLimitResponse>, tonic::Status> {
        // As serve's door does: the same timer keeping on the same threads.
        throttlekit_serve::workers::note_request();
        let n = request.into_inner().descriptors.len();
        Ok(tonic::Response::new(RateLimitResponse {
            overall_code: 1,
            statuses: vec![DescriptorStatus { code: 1, ..Default::default() }; n],
            ..Default::default()
        }))
    }
}

/// The bench's request: `descriptors` descriptors `[("d{i}", "user-{user}")]` in domain `bench`.
fn request(descriptors: usize, user: usize) -> RateLimitRequest {
    RateLimitRequest {
        domain: "bench".into(),
        descriptors: (0..descriptors)
            .map(|i| RateLimitDescriptor {
                entries: vec![Entry { key: format!("d{i}"), value: format!("user-{user}") }],
                ..Default::default()
            })
            .collect(),
        hits_addend: 0,
    }
}

/// The empty service on `throttlekit serve`'s own gRPC threads (one per core).
async fn serve_empty() -> Result<(), Box<dyn std::error::Error>> {
    use throttlekit_serve::workers;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let listeners = workers::listeners("127.0.0.1:0".parse()?, threads)?;
    println!("listening {}", listeners[0].local_addr()?);
    let services = workers::Services {
        routes: tonic::service::Routes::new(throttlekit_serve::rls_server::RlsServer::new(Empty)),
        timeout: Duration::from_secs(10),
        bind: None,
    };
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let mut done = workers::start(listeners, services, stop)?;
    for _ in 0..threads {
        if let Some(Err(e)) = done.recv().await {
            return Err(e.into());
        }
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--empty") {
        return serve_empty().await;
    }
    if args.first().map(String::as_str) == Some("--grpc-body") && args.len() == 3 {
        use prost::Message;
        let body = request(args[1].parse()?, 1).encode_to_vec();
        let mut framed = vec![0u8];
        framed.extend_from_slice(&u32::try_from(body.len())?.to_be_bytes());
        framed.extend_from_slice(&body);
        std::fs::write(&args[2], framed)?;
        return Ok(());
    }
    if args.len() != 4 {
        eprintln!("usage: rls_load ADDR STREAMS DESCRIPTORS SECONDS");
        std::process::exit(2);
    }
    let addr = format!("http://{}", args[0]);
    let streams: usize = args[1].parse()?;
    let descriptors: usize = args[2].parse()?;
    let seconds: f64 = args[3].parse()?;
    let channel = tonic::transport::Channel::from_shared(addr)?.connect().await?;
    let client = RateLimitServiceClient::new(channel);
    let warm_until = Instant::now() + Duration::from_millis(300);
    let mut tasks = Vec::new();
    for s in 0..streams {
        let mut client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat: Vec<u32> = Vec::with_capacity(1 << 16);
            let (mut errors, mut over, mut sent) = (0u64, 0u64, 0u64);
            let mut n = s;
            let mut started = None;
            let mut end = None;
            loop {
                let now = Instant::now();
                if now >= warm_until && started.is_none() {
                    started = Some(now);
                    end = Some(now + Duration::from_secs_f64(seconds));
                }
                if end.is_some_and(|e| now >= e) {
                    break;
                }
                n = n.wrapping_add(streams);
                let req = request(descriptors, n % 1000);
                let t = Instant::now();
                sent += 1;
                match client.should_rate_limit(req).await {
                    Ok(r) => {
                        if r.into_inner().overall_code != 1 {
                            over += 1;
                        }
                    }
                    Err(_) => errors += 1,
                }
                if started.is_some() {
                    lat.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                }
            }
            (lat, errors, over, sent)
        }));
    }
    let mut all = Vec::new();
    let (mut errors, mut over, mut sent) = (0, 0, 0);
    for t in tasks {
        let (l, e, o, s) = t.await?;
        all.extend(l);
        errors += e;
        over += o;
        sent += s;
    }
    all.sort_unstable();
    let pct =
        |p: f64| all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1))).copied().unwrap_or(0);
    println!(
        "ROW serve streams={streams} descriptors={descriptors} requests={} rps={:.0} p50_us={} p99_us={} errors={errors} over={over} sent={sent}",
        all.len(),
        all.len() as f64 / seconds,
        pct(0.50),
        pct(0.99)
    );
    Ok(())
}
