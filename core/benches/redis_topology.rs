//! Where the Redis store runs, measured (not part of the test suite; `bench/run.sh` runs it):
//!
//!     cargo bench -p throttlekit --bench redis_topology
//!
//! - **Functions vs scripts**: server time per call (`INFO commandstats` `usec_per_call`) of
//!   `FCALL` and of `EVALSHA` running the same `lua/` text, for GCRA and for the fused multi
//!   check, on one throwaway redis-server. The ratio is FCALL's time over EVALSHA's.
//! - **Cluster throughput**: GCRA checks/s on a throwaway 3-master cluster, sequential
//!   (`check_sync`) and with 50 in flight (async tasks on one store), each next to the same
//!   measurement on one standalone server (ratio: cluster over standalone; target >= 0.9). On a
//!   cluster every call is routed by the store itself (`core/src/redis/cluster/`: a pooled
//!   blocking connection per master for `check_sync`, a multiplexed one per master for async
//!   calls, as on one node), and the 50 in flight are spread over 50 keys, so they spread over
//!   the three masters.
//! - **Durable charges**: sequential `check_sync` on a master with one replica, with
//!   `durable_replicas = 1` (`WAIT 1` pipelined after every call) and without (ratio: durable
//!   over plain throughput; its inverse is the cost per call).
//!
//! Prints `ROW` lines for `bench/summarize.py`. `TK_BENCH_N` sets the calls per measurement
//! (default 20000).

#[path = "support/placement.rs"]
mod placement;
#[path = "../tests/support/redis_cluster.rs"]
mod redis_cluster;
#[path = "../tests/support/redis_server.rs"]
mod redis_server;

use std::sync::Arc;
use std::time::Instant;

use redis_server::{RedisServer, cli, field};
use throttlekit::redis::scripts::SCRIPTS;
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore, Scripting};
use throttlekit::store::Now;
use throttlekit::{Dimension, Limiter, MultiLimiter, Rule, Strategy};

const NOW: i64 = 1_800_000_000_000;
const IN_FLIGHT: usize = 50;

/// `usec_per_call` of `cmd` on the server at `port`.
fn usec_per_call(port: u16, cmd: &str) -> f64 {
    let stats = cli(port, &["info", "commandstats"]).expect("INFO commandstats");
    field(&stats, &format!("cmdstat_{cmd}"))
        .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("usec_per_call=").and_then(|n| n.parse().ok())))
        .unwrap_or_else(|| panic!("no cmdstat_{cmd} in\n{stats}"))
}

fn store(options: RedisOptions) -> Arc<RedisStore> {
    Arc::new(RedisStore::connect_blocking(RedisOptions { timeout_ms: 5000, ..options }).expect("connect"))
}

fn gcra(store: Arc<RedisStore>) -> Arc<Limiter> {
    Arc::new(Limiter::builder(Strategy::gcra(1_000_000_000, 1000, None).unwrap()).store(store).prefix("bench").build())
}

/// Server time per call, FCALL and EVALSHA, for GCRA and for the fused multi check.
fn functions_vs_scripts(n: usize) {
    for (what, multi) in [("gcra", false), ("multi all (2 dims)", true)] {
        let server = RedisServer::start();
        let mut usec = Vec::new();
        for (scripting, cmd) in [(Scripting::Functions, "fcall"), (Scripting::Eval, "evalsha")] {
            let s = store(RedisOptions { urls: vec![server.url()], scripting, ..RedisOptions::default() });
            if multi {
                let m = MultiLimiter::new(
                    Rule::All,
                    vec![
                        Dimension::new("user", Strategy::gcra(1_000_000_000, 1000, None).unwrap()),
                        Dimension::new("ip", Strategy::fixed_window(1_000_000_000, 1000).unwrap()),
                    ],
                )
                .unwrap()
                .with_store(s);
                for _ in 0..n {
                    m.check_sync(&["u", "ip"], 1).unwrap();
                }
            } else {
                let l = gcra(s);
                for _ in 0..n {
                    l.check_sync_at("k", 1, NOW).unwrap();
                }
            }
            usec.push(usec_per_call(server.port, cmd));
        }
        let (fcall, evalsha) = (usec[0], usec[1]);
        println!(
            "ROW\tredis server time per call, FCALL vs EVALSHA ({what})\tEVALSHA, same lua/ text\t{:.2}\t-\tFCALL {fcall:.2} us, EVALSHA {evalsha:.2} us per call ({n} calls each)",
            fcall / evalsha
        );
    }
}

/// Sequential `check_sync` on `l` over [`IN_FLIGHT`] keys (so a cluster's calls visit every
/// master): `n` calls.
fn sequential_calls(l: &Limiter, n: usize) {
    for i in 0..n {
        l.check_sync_at(&format!("k{}", i % IN_FLIGHT), 1, NOW).unwrap();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Async checks/s with [`IN_FLIGHT`] tasks on `rt` (bound to the store by its first calls, as
/// any runtime awaiting them is).
fn in_flight(l: &Arc<Limiter>, n: usize, rt: &tokio::runtime::Runtime) -> f64 {
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..IN_FLIGHT)
            .map(|t| {
                let l = l.clone();
                tokio::spawn(async move {
                    for _ in 0..n / IN_FLIGHT {
                        l.check_at(&format!("k{t}"), 1, Now::At(NOW)).await.unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        (n / IN_FLIGHT * IN_FLIGHT) as f64 / start.elapsed().as_secs_f64()
    })
}

/// The machine's floor for a sequential client: raw redis-rs blocking connections, one per
/// node in `ports`, each key's `EVALSHA` sent to the node that owns it (found by asking), with
/// no routing logic at all: the loop's rate and CPU per call (`servers`' too).
fn raw_sequential(ports: &[u16], n: usize, servers: &[u32]) -> placement::Sample {
    let mut conns: Vec<redis::Connection> = ports
        .iter()
        .map(|p| {
            let mut c = redis::Client::open(format!("redis://127.0.0.1:{p}")).unwrap().get_connection().unwrap();
            let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(&SCRIPTS.gcra.source).query(&mut c).unwrap();
            c
        })
        .collect();
    let keys: Vec<String> = (0..IN_FLIGHT).map(|i| format!("bench:k{i}")).collect();
    let owner: Vec<usize> = keys
        .iter()
        .map(|k| conns.iter_mut().position(|c| redis::cmd("EXISTS").arg(k).query::<i64>(c).is_ok()).expect("an owner"))
        .collect();
    let cmds: Vec<redis::Cmd> =
        keys.iter().map(|k| placement::command(&placement::gcra_evalsha(&SCRIPTS.gcra.sha, k, NOW))).collect();
    placement::ours(n, servers, || {
        for i in 0..n {
            let k = i % IN_FLIGHT;
            let _: redis::Value = cmds[k].query(&mut conns[owner[k]]).unwrap();
        }
    })
}

/// Cluster against one standalone server, in paired rounds (`support/placement.rs`: each
/// round measures both back to back, who goes first alternating, after a warm-up round not
/// counted; every server and this process pinned to one CPU; the CPU per call of the client and
/// of the servers printed beside the rates); medians of the per-round ratios. Each store's
/// async calls run on one runtime kept for the whole run, bound to both stores and with its own
/// connections to every node up before the first round, so no round measures a runtime binding
/// itself. Also the floor: the same ratio for raw redis-rs connections with no routing at all
/// (three server processes woken in turn cost more than one kept busy; that is the machine, not
/// the client).
fn cluster_throughput(n: usize) {
    let rounds: usize = std::env::var("TK_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let server = RedisServer::start();
    let cluster = redis_cluster::RedisCluster::start(3, 0);
    let place = placement::Placement::from_env();
    let single_pids = vec![server.pid()];
    let cluster_pids: Vec<u32> = cluster.nodes.iter().map(RedisServer::pid).collect();
    for &pid in single_pids.iter().chain(&cluster_pids) {
        place.pin_server(pid);
    }
    place.pin_clients();
    // EVALSHA on every side, like the raw floor.
    let eval = RedisOptions { scripting: Scripting::Eval, ..RedisOptions::default() };
    let single_store = store(RedisOptions { urls: vec![server.url()], ..eval.clone() });
    let routed_store = store(RedisOptions { urls: cluster.urls(), mode: RedisMode::Cluster, ..eval });
    let (single, routed) = (gcra(single_store.clone()), gcra(routed_store.clone()));
    let masters = cluster.master_ports();
    let rt = runtime();
    for (l, s, nodes) in [(&single, &single_store, 1), (&routed, &routed_store, masters.len())] {
        sequential_calls(l, IN_FLIGHT);
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        loop {
            // Binds the runtime to the store; on a cluster its calls reach, and so connect it to, every master.
            in_flight(l, IN_FLIGHT, &rt);
            if rt.block_on(async { s.local_cluster_connections() }) >= nodes {
                break;
            }
            assert!(Instant::now() < deadline, "the runtime's own connections never came up");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let (mut seq, mut par, mut raw) = (placement::Duel::default(), Default::default(), placement::Duel::default());
    for round in 0..=rounds {
        let mut this = [placement::Duel::default(), Default::default(), Default::default()];
        this[0].round(
            round,
            || placement::ours(n, &cluster_pids, || sequential_calls(&routed, n)),
            || placement::ours(n, &single_pids, || sequential_calls(&single, n)),
        );
        let flight = n / IN_FLIGHT * IN_FLIGHT;
        this[1].round(
            round,
            || {
                placement::ours(flight, &cluster_pids, || {
                    in_flight(&routed, n, &rt);
                })
            },
            || {
                placement::ours(flight, &single_pids, || {
                    in_flight(&single, n, &rt);
                })
            },
        );
        this[2].round(
            round,
            || raw_sequential(&masters, n, &cluster_pids),
            || raw_sequential(&[server.port], n, &single_pids),
        );
        if round > 0 {
            for (all, one) in [&mut seq, &mut par, &mut raw].into_iter().zip(this) {
                all.ours.extend(one.ours);
                all.peer.extend(one.peer);
            }
        }
    }
    // Our sequential calls against the raw floor's, on the cluster, from the same rounds.
    let ours_vs_raw = placement::median(seq.ours.iter().zip(&raw.ours).map(|(o, r)| o.rate / r.rate).collect());
    let how = format!("{rounds} paired rounds of {n} calls a side after a warm-up round; {}", place.describe());
    println!(
        "ROW\tredis cluster (3 masters), sequential check_sync\tone standalone server, same\t{:.2}\t>=0.9\t{}; {how}",
        seq.ratio(),
        seq.detail("one node")
    );
    println!(
        "ROW\tredis cluster (3 masters), {IN_FLIGHT} in flight\tone standalone server, same\t{:.2}\t>=0.9\t{}; one 2-worker runtime bound to both stores",
        par.ratio(),
        par.detail("one node")
    );
    println!(
        "ROW\tfloor: raw redis-rs EVALSHA, sequential, each key to its master (no routing)\tthe same on one standalone server\t{:.2}\t-\t{}",
        raw.ratio(),
        raw.detail("one node")
    );
    println!(
        "ROW\tredis cluster (3 masters), sequential check_sync (routing overhead)\traw redis-rs EVALSHA to each key's master, same run\t{ours_vs_raw:.2}\t>=0.9\tmedian of the same {rounds} rounds"
    );
}

/// `TK_BENCH_ONLY=loop-par-{single,cluster}`: `n` async checks with [`IN_FLIGHT`] in flight
/// alone (after `IN_FLIGHT * 20` to warm up, on the same runtime), printing where the time
/// goes: CPU per call of this process and of its redis-server nodes (`/proc/<pid>/stat`), and
/// calls per server read (`INFO stats`), the batching each server sees.
fn in_flight_alone(side: &str, n: usize) {
    let eval = RedisOptions { scripting: Scripting::Eval, ..RedisOptions::default() };
    let (server, cluster);
    let (urls, mode, pids, ports) = if side == "single" {
        server = RedisServer::start();
        (vec![server.url()], RedisMode::Standalone, vec![server.pid()], vec![server.port])
    } else {
        cluster = redis_cluster::RedisCluster::start(3, 0);
        let pids = cluster.nodes.iter().map(RedisServer::pid).collect();
        (cluster.urls(), RedisMode::Cluster, pids, cluster.master_ports())
    };
    // The servers' reads (each a batch of commands from one connection).
    let reads = || {
        ports
            .iter()
            .map(|&p| {
                let stats = cli(p, &["info", "stats"]).expect("INFO stats");
                field(&stats, "total_reads_processed").and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
            })
            .sum::<f64>()
    };
    let l = gcra(store(RedisOptions { urls, mode, ..eval }));
    let rt = runtime();
    in_flight(&l, IN_FLIGHT * 20, &rt);
    let cpu = |pid: &str| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
        // utime + stime (fields 14 and 15, 1-based; 12 and 13 after the name), in ticks.
        fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
            + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0)
    };
    let servers = || pids.iter().map(|p| cpu(&p.to_string())).sum::<f64>();
    let (c0, s0, r0, start) = (cpu("self"), servers(), reads(), Instant::now());
    let rate = in_flight(&l, n, &rt);
    let (c1, s1, r1) = (cpu("self"), servers(), reads());
    // Ticks are 10 ms (USER_HZ 100).
    let per = |t: f64| t * 10_000.0 / n.max(1) as f64;
    eprintln!(
        "loop-par-{side}: {rate:.0} checks/s over {:.2} s; CPU per call: client {:.2} us, servers {:.2} us; {:.1} calls per server read",
        start.elapsed().as_secs_f64(),
        per(c1 - c0),
        per(s1 - s0),
        n as f64 / (r1 - r0).max(1.0)
    );
}

/// `TK_BENCH_ONLY=loop-{single,cluster,raw-single,raw-cluster}`: that sequential loop alone,
/// for `perf stat` (run it with `TK_BENCH_N=0` too: the difference is the loop's own cost).
fn one_loop(what: &str, n: usize) {
    let eval = RedisOptions { scripting: Scripting::Eval, ..RedisOptions::default() };
    match what {
        "single" | "raw-single" => {
            let server = RedisServer::start();
            if what == "single" {
                sequential(store(RedisOptions { urls: vec![server.url()], ..eval }), n);
            } else {
                raw_sequential(&[server.port], n, &[]);
            }
        }
        _ => {
            let cluster = redis_cluster::RedisCluster::start(3, 0);
            if what == "cluster" {
                sequential(store(RedisOptions { urls: cluster.urls(), mode: RedisMode::Cluster, ..eval }), n);
            } else {
                raw_sequential(&cluster.master_ports(), n, &[]);
            }
        }
    }
}

/// Sequential check_sync/s on `store`.
fn sequential(store: Arc<RedisStore>, n: usize) -> f64 {
    let l = gcra(store);
    l.check_sync_at("k", 1, NOW).unwrap();
    let start = Instant::now();
    for i in 0..n {
        l.check_sync_at(&format!("k{}", i % IN_FLIGHT), 1, NOW).unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// The cost of `durable_replicas = 1` on a master with one replica.
fn durable_cost(n: usize) {
    let master = RedisServer::start();
    let replica = RedisServer::start_with(
        &["--replicaof".to_string(), "127.0.0.1".to_string(), master.port.to_string()],
        redis_server::free_port,
    );
    while !cli(replica.port, &["info", "replication"]).is_some_and(|i| i.contains("master_link_status:up")) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let plain = sequential(store(RedisOptions { urls: vec![master.url()], ..RedisOptions::default() }), n);
    let durable = sequential(
        store(RedisOptions {
            urls: vec![master.url()],
            durable_replicas: 1,
            durable_timeout_ms: 1000,
            ..RedisOptions::default()
        }),
        n,
    );
    println!(
        "ROW\tredis durable_replicas=1 (WAIT 1 after each call), sequential check_sync\tthe same without durable_replicas\t{:.2}\t-\t{durable:.0} vs {plain:.0} checks/s: {:.1} vs {:.1} us per call",
        durable / plain,
        1e6 / durable,
        1e6 / plain
    );
}

fn main() {
    let n: usize = std::env::var("TK_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let only = std::env::var("TK_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "functions" {
        functions_vs_scripts(n);
    }
    if only.is_empty() || only == "cluster" {
        cluster_throughput(n);
    }
    if only.is_empty() || only == "durable" {
        durable_cost(n);
    }
    if let Some(side) = only.strip_prefix("loop-par-") {
        in_flight_alone(side, n);
    } else if let Some(what) = only.strip_prefix("loop-") {
        one_loop(what, n);
    }
}
