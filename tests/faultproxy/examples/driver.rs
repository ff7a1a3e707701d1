//! The Rust side of the fault proofs, chaos and soak (see tests/faults/driver.py for the
//! protocol): `driver URLS MODE TIMEOUT_MS [DURABLE_REPLICAS]`, MODE `standalone`, `cluster` or
//! `sentinel:NAME`. An example rather than a binary so that it may use dev-dependencies.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore};
use throttlekit::{FailPolicy, Limiter, Store, Strategy};
use throttlekit_faultproxy::stalls;

/// The first connection is set-up, not under test: a loaded machine gets a few tries.
fn open(args: &[String]) -> Result<Arc<RedisStore>, String> {
    let mut last = String::new();
    for _ in 0..5 {
        match open_once(args) {
            Ok(store) => return Ok(store),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(last)
}

fn open_once(args: &[String]) -> Result<Arc<RedisStore>, String> {
    let (mode, service_name) = match args[2].split_once(':') {
        Some(("sentinel", name)) => (RedisMode::Sentinel, Some(name.to_string())),
        _ if args[2] == "cluster" => (RedisMode::Cluster, None),
        _ => (RedisMode::Standalone, None),
    };
    let options = RedisOptions {
        urls: args[1].split(',').map(str::to_string).collect(),
        mode,
        service_name,
        timeout_ms: args[3].parse().map_err(|_| "TIMEOUT_MS")?,
        durable_replicas: args.get(4).map_or(Ok(0), |d| d.parse()).map_err(|_| "DURABLE_REPLICAS")?,
        ..RedisOptions::default()
    };
    RedisStore::connect_blocking(options).map(Arc::new).map_err(|e| e.to_string())
}

/// This process's scheduling stalls since a run began (`throttlekit_faultproxy::stalls`), as
/// each run reports them: `stalls`, the sleeper's late wake-ups as `[from_ms, to_ms, ms]` (`ms`
/// of stall somewhere within [from, to], in ms since the process started:
/// tests/faults/stalls.py), and `call_stall_ms`, the longest any one call waited for a CPU.
/// The orchestrator adds to a call's bound the most of the events that overlap one call (a
/// call hit by two stalls took both, so the worst single one is not enough), or that longest
/// wait (already the sum of one call's own), the larger.
static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// The sleeper's events since the last take, in ms since the process started, to 0.01 ms.
fn take_stalls() -> Vec<[f64; 3]> {
    let origin = *ORIGIN.get_or_init(Instant::now);
    let ms = |d: Duration| (d.as_secs_f64() * 100_000.0).round() / 100.0;
    stalls::take()
        .iter()
        .map(|s| [ms(s.from.duration_since(origin)), ms(s.to.duration_since(origin)), ms(s.late)])
        .collect()
}

#[derive(Default)]
struct Tally {
    calls: u64,
    allowed: u64,
    denied: u64,
    errors: u64,
    codes: serde_json::Map<String, Value>,
    allowed_by_key: serde_json::Map<String, Value>,
    latencies: Vec<f64>,
    call_stall: Duration,
    next: u64,
    stop: bool,
}

fn bump(map: &mut serde_json::Map<String, Value>, key: &str) {
    let n = map.get(key).and_then(Value::as_u64).unwrap_or(0);
    map.insert(key.to_string(), json!(n + 1));
}

fn run(store: &Arc<RedisStore>, cmd: &Value) -> Result<Value, String> {
    let num = |k: &str| cmd[k].as_u64();
    let strategy = Strategy::gcra(num("limit").ok_or("limit")?, num("window_ms").ok_or("window_ms")?, None)
        .map_err(|e| e.to_string())?;
    let limiter = Limiter::builder(strategy)
        .store(store.clone() as Arc<dyn Store>)
        .prefix(cmd["prefix"].as_str().unwrap_or(""))
        .fail_policy(FailPolicy::Raise)
        .build();
    let keys: Vec<String> =
        cmd["keys"].as_array().ok_or("keys")?.iter().filter_map(|k| k.as_str().map(String::from)).collect();
    let calls = num("calls");
    let deadline = cmd["seconds"].as_f64().map(|s| Instant::now() + Duration::from_secs_f64(s));
    let stop_on_deny = cmd["stop_on_deny"].as_bool().unwrap_or(false);
    let pace = Duration::from_millis(num("pace_ms").unwrap_or(0));
    let tally = Mutex::new(Tally::default());
    stalls::forget();
    std::thread::scope(|scope| {
        for _ in 0..num("concurrency").unwrap_or(1).max(1) {
            scope.spawn(|| {
                loop {
                    let key = {
                        let mut t = tally.lock().unwrap();
                        if t.stop || calls.is_some_and(|c| t.next >= c) || deadline.is_some_and(|d| Instant::now() >= d)
                        {
                            return;
                        }
                        t.next += 1;
                        keys[(t.next - 1) as usize % keys.len()].clone()
                    };
                    let (started, waited) = (Instant::now(), stalls::runqueue());
                    let out = limiter.check_sync(&key, 1);
                    let took = started.elapsed().as_secs_f64() * 1000.0;
                    let waited = stalls::runqueue().saturating_sub(waited);
                    let mut t = tally.lock().unwrap();
                    t.call_stall = t.call_stall.max(waited);
                    t.latencies.push(took);
                    t.calls += 1;
                    match out {
                        Ok(d) if d.allowed => {
                            t.allowed += 1;
                            bump(&mut t.allowed_by_key, &key);
                        }
                        Ok(_) => {
                            t.denied += 1;
                            t.stop |= stop_on_deny;
                        }
                        Err(e) => {
                            t.errors += 1;
                            bump(&mut t.codes, e.code().as_str());
                        }
                    }
                    drop(t);
                    std::thread::sleep(pace);
                }
            });
        }
    });
    let mut t = tally.into_inner().unwrap();
    t.latencies.sort_by(f64::total_cmp);
    let n = t.latencies.len();
    let round = |v: f64| (v * 10.0).round() / 10.0;
    Ok(json!({
        "calls": t.calls, "allowed": t.allowed, "denied": t.denied, "errors": t.errors,
        "codes": t.codes, "allowed_by_key": t.allowed_by_key,
        "worst_ms": if n > 0 { round(t.latencies[n - 1]) } else { 0.0 },
        "p99_ms": if n > 0 { round(t.latencies[n * 99 / 100]) } else { 0.0 },
        "stalls": take_stalls(),
        "call_stall_ms": round(t.call_stall.as_secs_f64() * 1000.0),
    }))
}

fn close(store: &Arc<RedisStore>) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(store.close()).map_err(|e| e.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: driver URLS MODE TIMEOUT_MS [DURABLE_REPLICAS]");
        std::process::exit(2);
    }
    ORIGIN.get_or_init(Instant::now);
    stalls::start();
    let mut store = open(&args).unwrap_or_else(|e| {
        eprintln!("connect: {e}");
        std::process::exit(1)
    });
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let cmd: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let reply = match cmd["cmd"].as_str() {
            Some("run") => run(&store, &cmd),
            Some("reopen") => close(&store).and_then(|_| open(&args)).map(|s| {
                store = s;
                json!({"ok": true})
            }),
            // Rust frees as it goes: nothing waits for a collector before soak.py samples memory.
            Some("collect") => Ok(json!({"ok": true})),
            Some("close") => close(&store).map(|_| json!({"ok": true})),
            Some("quit") => return,
            other => Err(format!("unknown command {other:?}")),
        };
        let reply = reply.unwrap_or_else(|e| json!({ "error": e }));
        let mut out = stdout.lock();
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
}
