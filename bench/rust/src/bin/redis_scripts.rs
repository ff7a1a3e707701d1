//! Redis peer benchmarks that need no Python or Node (run by bench/run.sh):
//!
//! 1. Server time per call (`INFO commandstats`, `usec_per_call` of EVALSHA) of each of our Lua
//!    check scripts against the original ThrottleKit's scripts (shipped inside the throttlekit-py
//!    wheel), same parameters, same sequence of `now`s, so the same state; interleaved rounds.
//! 2. `MEMORY USAGE` of the key each left behind.
//! 3. `Limiter::check_many` of 16 keys (one pipelined round trip) against `redis-benchmark -P 16`
//!    running the identical EVALSHA.
//!
//! Usage: `redis_scripts <dir with the original's *.check.lua> [--quick]`. Starts its own
//! redis-server on a free loopback port and stops it by PID.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use throttlekit::redis::scripts::SCRIPTS;
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{Limiter, Strategy};

// ---------------------------------------------------------------------------------------------
// A throwaway server and a minimal RESP client.

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Server {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server");
        // Owned by the guard from here on, so a server that never answers is killed and reaped too.
        let server = Server { child, port };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server did not start");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
enum Resp {
    Simple(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Resp>),
    Error(String),
}

impl Resp {
    fn text(&self) -> String {
        match self {
            Resp::Simple(s) | Resp::Error(s) => s.clone(),
            Resp::Int(i) => i.to_string(),
            Resp::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            Resp::Bulk(None) => String::new(),
            Resp::Array(a) => format!("{a:?}"),
        }
    }
}

struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Conn {
    fn new(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nodelay(true).unwrap();
        Conn { r: BufReader::new(s.try_clone().unwrap()), w: s }
    }

    fn encode(buf: &mut Vec<u8>, args: &[&str]) {
        write!(buf, "*{}\r\n", args.len()).unwrap();
        for a in args {
            write!(buf, "${}\r\n{a}\r\n", a.len()).unwrap();
        }
    }

    fn read(&mut self) -> Resp {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        let (kind, rest) = line.trim_end().split_at(1);
        match kind {
            "+" => Resp::Simple(rest.into()),
            "-" => Resp::Error(rest.into()),
            ":" => Resp::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Resp::Bulk(None);
                }
                let mut b = vec![0; n as usize + 2];
                std::io::Read::read_exact(&mut self.r, &mut b).unwrap();
                b.truncate(n as usize);
                Resp::Bulk(Some(b))
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                Resp::Array((0..n.max(0)).map(|_| self.read()).collect())
            }
            _ => panic!("bad reply {line:?}"),
        }
    }

    fn cmd(&mut self, args: &[&str]) -> Resp {
        let mut buf = Vec::new();
        Conn::encode(&mut buf, args);
        self.w.write_all(&buf).unwrap();
        self.read()
    }

    /// Sends `calls` in pipelined batches; panics on an error reply.
    fn pipeline(&mut self, calls: &[Vec<String>]) {
        for batch in calls.chunks(256) {
            let mut buf = Vec::new();
            for c in batch {
                let args: Vec<&str> = c.iter().map(String::as_str).collect();
                Conn::encode(&mut buf, &args);
            }
            self.w.write_all(&buf).unwrap();
            for _ in batch {
                if let Resp::Error(e) = self.read() {
                    panic!("script error: {e}");
                }
            }
        }
    }

    fn evalsha_usec_per_call(&mut self) -> f64 {
        let info = self.cmd(&["INFO", "commandstats"]).text();
        let line = info.lines().find(|l| l.starts_with("cmdstat_evalsha:")).expect("evalsha stats");
        let field = line.split(',').find_map(|f| f.strip_prefix("usec_per_call=")).expect("usec_per_call");
        field.parse().unwrap()
    }
}

// ---------------------------------------------------------------------------------------------

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let m = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    (m, v[0], v[n - 1])
}

fn row(scenario: &str, peer: &str, ratio: f64, target: &str, detail: &str) {
    println!("ROW\t{scenario}\t{peer}\t{ratio:.2}\t{target}\t{detail}");
}

/// One strategy: our script's ARGV after `now` and the original's (both with cost 1).
struct Case {
    name: &'static str,
    ours_sha: String,
    ours_args: Vec<&'static str>,
    theirs_file: &'static str,
    theirs_args: Vec<&'static str>,
    /// ms between calls (the same for both sides).
    step_ms: i64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: redis_scripts <dir of the original's *.check.lua> [--quick]");
    let quick = args.iter().any(|a| a == "--quick");
    let (rounds, calls) = if quick { (5, 5_000) } else { (9, 20_000) };
    let server = Server::start();
    let mut c = Conn::new(server.port);
    let version = c.cmd(&["INFO", "server"]).text();
    let version = version.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").to_string();
    println!("redis-server {version}; {rounds} rounds of {calls} EVALSHA per side, medians (min, max)");

    for s in SCRIPTS.all() {
        let sha = c.cmd(&["SCRIPT", "LOAD", &s.source]).text();
        assert_eq!(sha, s.sha, "{}", s.name);
    }
    let s = &*SCRIPTS;
    let cases = vec![
        Case {
            name: "gcra",
            ours_sha: s.gcra.sha.clone(),
            // 3600 an hour (each call pushes the TAT 1 s ahead), burst 10^9: always allowed,
            // and the key's TTL grows, so it is still there for MEMORY USAGE.
            ours_args: vec!["check", "1", "3600", "3600000", "1000000000"],
            theirs_file: "gcra.check.lua",
            theirs_args: vec!["3600000", "3600", "1000000000", "1"],
            step_ms: 1,
        },
        Case {
            name: "tokenBucket",
            ours_sha: s.token_bucket.sha.clone(),
            ours_args: vec!["check", "1", "1000000", "10000"],
            theirs_file: "tokenBucket.check.lua",
            theirs_args: vec!["1000000", "10000", "1"],
            step_ms: 1,
        },
        Case {
            name: "fixedWindow",
            ours_sha: s.fixed_window.sha.clone(),
            ours_args: vec!["check", "1", "1000000000", "60000"],
            theirs_file: "fixedWindow.check.lua",
            theirs_args: vec!["1000000000", "60000", "1"],
            step_ms: 1,
        },
        Case {
            name: "slidingWindow",
            ours_sha: s.sliding_window.sha.clone(),
            ours_args: vec!["check", "1", "1000000000", "60000", "10"],
            theirs_file: "slidingWindow.check.lua",
            theirs_args: vec!["60000", "1000000000", "1", "10"],
            step_ms: 1,
        },
        Case {
            name: "slidingWindowLog",
            ours_sha: s.sliding_window_log.sha.clone(),
            ours_args: vec!["check", "1", "1000000000", "1000"],
            theirs_file: "slidingWindowLog.check.lua",
            theirs_args: vec!["1000", "1000000000", "1"],
            // 100 entries live in the 1 s window.
            step_ms: 10,
        },
    ];

    let base_now: i64 = 1_800_000_000_000;
    for case in &cases {
        let src = std::fs::read_to_string(format!("{dir}/{}", case.theirs_file)).expect("original script");
        let theirs_sha = c.cmd(&["SCRIPT", "LOAD", &src]).text();
        let (ours_key, theirs_key) = (format!("ours:{}", case.name), format!("theirs:{}", case.name));
        let mut now = [base_now; 2];
        let batch = |side: usize, n: usize, now: &mut i64| -> Vec<Vec<String>> {
            (0..n)
                .map(|_| {
                    *now += case.step_ms;
                    let (sha, key, rest) = if side == 0 {
                        (&case.ours_sha, &ours_key, &case.ours_args)
                    } else {
                        (&theirs_sha, &theirs_key, &case.theirs_args)
                    };
                    let mut v = vec!["EVALSHA".to_string(), sha.clone(), "1".into(), key.clone(), now.to_string()];
                    v.extend(rest.iter().map(|s| s.to_string()));
                    v
                })
                .collect()
        };
        // Warm up: build the state (and for the log, fill the window).
        for (side, now) in now.iter_mut().enumerate() {
            let calls = batch(side, 2000, now);
            c.pipeline(&calls);
        }
        let mut per_call = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            for i in 0..2 {
                let side = (i + round) % 2;
                let calls = batch(side, calls, &mut now[side]);
                c.cmd(&["CONFIG", "RESETSTAT"]);
                c.pipeline(&calls);
                per_call[side].push(c.evalsha_usec_per_call());
            }
        }
        let [ours, theirs] = per_call;
        let ((o, omin, omax), (t, tmin, tmax)) = (median(ours), median(theirs));
        // The ratio of the fastest rounds: on a shared machine a round is slowed by whatever else
        // runs (the server's own clock measures wall time), never sped up, so each side's fastest
        // round is its closest to the script's own cost; the medians are printed beside it.
        println!(
            "{:<18} server time per call: ours {o:.2} us ({omin:.2}..{omax:.2}), original {t:.2} us ({tmin:.2}..{tmax:.2}), ours/theirs {:.2} (fastest rounds), {:.2} (medians)",
            case.name,
            omin / tmin,
            o / t
        );
        row(
            &format!("Redis server time per call, {} check script", case.name),
            "original ThrottleKit script",
            omin / tmin,
            "<=1.0",
            &format!("fastest rounds {omin:.2} vs {tmin:.2} us/call, medians {o:.2} vs {t:.2} (ours/theirs)"),
        );
        let mem = |c: &mut Conn, key: &str| match c.cmd(&["MEMORY", "USAGE", key]) {
            Resp::Int(n) => n as f64,
            other => panic!("MEMORY USAGE {key}: {other:?} (the key expired: give this case a longer TTL)"),
        };
        let (om, tm) = (mem(&mut c, &ours_key), mem(&mut c, &theirs_key));
        println!("{:<18} MEMORY USAGE: ours {om} B, original {tm} B, ours/theirs {:.2}", case.name, om / tm);
        row(
            &format!("Redis memory per key (MEMORY USAGE), {}", case.name),
            "original ThrottleKit script",
            om / tm,
            "<=1.0",
            &format!("{om} vs {tm} B (ours/theirs)"),
        );
    }

    // check_many of 16 against redis-benchmark -P 16 of the same EVALSHA.
    let store = RedisStore::connect_blocking(RedisOptions {
        urls: vec![format!("redis://127.0.0.1:{}", server.port)],
        ..RedisOptions::default()
    })
    .expect("connect");
    let limiter = Limiter::builder(Strategy::gcra(1_000_000_000, 1000, None).unwrap()).store(Arc::new(store)).build();
    let keys: Vec<String> = (0..16).map(|i| format!("many:{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let batches = calls / 16;
    let mut ours = Vec::new();
    let mut ceiling = Vec::new();
    rt.block_on(async {
        for _ in 0..50 {
            limiter.check_many(&keys, 1).await.unwrap();
        }
    });
    for _ in 0..rounds {
        let start = Instant::now();
        rt.block_on(async {
            for _ in 0..batches {
                limiter.check_many(&keys, 1).await.unwrap();
            }
        });
        ours.push((batches * 16) as f64 / start.elapsed().as_secs_f64());
        ceiling.push(redis_benchmark(server.port, &SCRIPTS.gcra.sha, calls));
    }
    let ((o, omin, omax), (t, tmin, tmax)) = (median(ours), median(ceiling));
    println!(
        "check_many of 16: ours {o:.0} checks/s ({omin:.0}..{omax:.0}), redis-benchmark -P 16 {t:.0}/s ({tmin:.0}..{tmax:.0}), ratio {:.2}",
        o / t
    );
    row(
        "Rust over Redis, check_many of 16 (one pipelined round trip)",
        "redis-benchmark -P 16 EVALSHA",
        o / t,
        ">=0.5",
        &format!("{o:.0} vs {t:.0} checks/s"),
    );
}

fn redis_benchmark(port: u16, sha: &str, n: usize) -> f64 {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-n", &n.to_string(), "-c", "1", "-P", "16", "--csv"])
        .args(["EVALSHA", sha, "1", "bench:p16", "1800000000000", "check", "1", "1000000000", "1000", "1000000000"])
        .output()
        .expect("redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("EVALSHA")).unwrap_or_else(|| panic!("no result in {text}"));
    line.split(',')
        .nth(1)
        .and_then(|f| f.trim_matches('"').parse().ok())
        .unwrap_or_else(|| panic!("cannot parse {line}"))
}
