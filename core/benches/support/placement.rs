//! Where a Redis bench's processes run, and what each one spent: shared by `redis.rs` and
//! `redis_topology.rs` (a module of each, not a bench of its own).
//!
//! Why pin: a sequential call is one round trip between two processes, and on the project's
//! 2-vCPU guests most of its time is the handoff between them. A handoff between processes on
//! one vCPU is a context switch; between two vCPUs it wakes a halted vCPU through the host, which
//! costs several times as much and varies with the host (the 2-core Intel guest: 25-27k calls/s
//! on one vCPU, 3.3k across two, `redis-benchmark` and ours alike, each process then charged
//! 40-50 us of CPU a call). Left to the scheduler, which of the two a run gets is chosen anew for
//! every process started (each `redis-benchmark` run) and whenever it rebalances: the rounds of
//! one quiet run of the sequential async row read 0.80-1.37x of `redis-benchmark` (AMD), and
//! 0.89-2.95x on the loaded Intel guest. So by default the servers and every client (ours with
//! all its threads, `redis-benchmark`, the raw redis-rs reference) share one vCPU, the same for
//! both sides of every ratio: a call costs the client's work, the server's and two context
//! switches, and the host is out of the loop. `TK_BENCH_PIN=S,C` puts the servers on CPU S and
//! the clients on CPU C (the default is `L,L`, L the last CPU this process may use);
//! `TK_BENCH_PIN=off` leaves placement to the scheduler, as the rows were measured before.
//!
//! Why CPU per call beside the rates: on a machine shared with other work the rates move with
//! the neighbours, while the CPU a call costs each process moves much less. Ours is this
//! process's CPU time (every thread, the store's runtime included); `redis-benchmark`'s is its
//! `rusage` less what a run of one call per connection costs (start, connect, its `CONFIG GET`s);
//! a server's is its threads' run time from `/proc/<pid>/task/*/schedstat`.

#![allow(dead_code)]

use std::process::Command;

/// The CPUs the server and the clients run on (`None`: not pinned).
#[derive(Clone, Copy)]
pub struct Placement {
    pub server: Option<usize>,
    pub client: Option<usize>,
}

impl Placement {
    /// From `TK_BENCH_PIN` (see the module's doc).
    pub fn from_env() -> Placement {
        let none = Placement { server: None, client: None };
        match std::env::var("TK_BENCH_PIN").as_deref() {
            Ok("off") => none,
            Ok(v) if !v.is_empty() => {
                let cpus: Vec<usize> = v.split(',').filter_map(|c| c.trim().parse().ok()).collect();
                assert!(cpus.len() == 2, "TK_BENCH_PIN={v}: want `off` or SERVER_CPU,CLIENT_CPU");
                Placement { server: Some(cpus[0]), client: Some(cpus[1]) }
            }
            _ => {
                let last = allowed_cpus().last().copied();
                Placement { server: last, client: last }
            }
        }
    }

    /// Pins every thread of the server process `pid`.
    pub fn pin_server(&self, pid: u32) {
        if let Some(cpu) = self.server {
            pin_process(pid, cpu);
        }
    }

    /// Pins this process (every thread it has now; threads and processes it starts later inherit
    /// the mask). Call it before the store starts its runtime.
    pub fn pin_clients(&self) {
        if let Some(cpu) = self.client {
            pin_process(std::process::id(), cpu);
        }
    }

    pub fn describe(&self) -> String {
        match (self.server, self.client) {
            (Some(s), Some(c)) if s == c => {
                format!("servers and clients (ours and redis-benchmark) pinned to CPU {s} (TK_BENCH_PIN)")
            }
            (Some(s), Some(c)) => format!("servers pinned to CPU {s}, clients (ours and redis-benchmark) to CPU {c}"),
            _ => "not pinned (TK_BENCH_PIN=off)".to_string(),
        }
    }
}

fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set, filled by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

fn pin_process(pid: u32, cpu: usize) {
    let tasks: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_else(|_| vec![pid as i32]);
    for tid in tasks {
        // SAFETY: a plain bit set with one CPU; `sched_setaffinity` only reads it.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        assert_eq!(rc, 0, "sched_setaffinity({tid}, CPU {cpu}): {}", std::io::Error::last_os_error());
    }
}

/// This process's CPU time, every thread, in ns.
pub fn own_cpu_ns() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and out pointer.
    assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) }, 0);
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// The CPU time of this process's children that were waited for, in ns.
pub fn children_cpu_ns() -> f64 {
    // SAFETY: `usage` is filled by the kernel.
    let u = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    (us(u.ru_utime) + us(u.ru_stime)) * 1e3
}

/// The run time of every thread of process `pid`, in ns (`/proc/<pid>/task/*/schedstat`).
pub fn process_cpu_ns(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0.0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .sum()
}

/// The servers' CPU time, summed, in ns.
pub fn servers_cpu_ns(pids: &[u32]) -> f64 {
    pids.iter().map(|&p| process_cpu_ns(p)).sum()
}

/// One measurement of one side: calls per second, and CPU per call in µs of the client and of
/// the servers.
#[derive(Clone, Copy, Default)]
pub struct Sample {
    pub rate: f64,
    pub client_us: f64,
    pub server_us: f64,
}

/// Runs `calls` calls by `f` on this process, timed in wall clock and CPU (ours and the
/// servers').
pub fn ours(calls: usize, servers: &[u32], f: impl FnOnce()) -> Sample {
    let (c0, s0, start) = (own_cpu_ns(), servers_cpu_ns(servers), std::time::Instant::now());
    f();
    let secs = start.elapsed().as_secs_f64();
    let (c1, s1) = (own_cpu_ns(), servers_cpu_ns(servers));
    let per = |ns: f64| ns / calls as f64 / 1e3;
    Sample { rate: calls as f64 / secs, client_us: per(c1 - c0), server_us: per(s1 - s0) }
}

/// `redis-benchmark` (`-c clients -n calls`, the command `command`) against `port`: its own rate
/// (it times from its first request to its last reply), and its CPU and the server's per call,
/// less a run's fixed costs (`fixed`, from [`RedisBenchmark::fixed`]).
pub struct RedisBenchmark {
    pub port: u16,
    pub server_pids: Vec<u32>,
    pub command: Vec<String>,
}

impl RedisBenchmark {
    fn run(&self, clients: usize, calls: usize) -> (f64, f64, f64) {
        let (c0, s0) = (children_cpu_ns(), servers_cpu_ns(&self.server_pids));
        let out = Command::new("redis-benchmark")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-n", &calls.to_string()])
            .args(["-c", &clients.to_string(), "--csv"])
            .args(&self.command)
            .output()
            .expect("redis-benchmark (apt-get install redis-tools)");
        let (c1, s1) = (children_cpu_ns(), servers_cpu_ns(&self.server_pids));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.contains(&self.command[0])).unwrap_or_else(|| panic!("no result in {text}"));
        let rate = line
            .split(',')
            .nth(1)
            .and_then(|f| f.trim_matches('"').parse().ok())
            .unwrap_or_else(|| panic!("cannot parse {line}"));
        (rate, c1 - c0, s1 - s0)
    }

    /// What a run costs besides its calls: the client's and the server's CPU (ns) of a run of one
    /// call per connection, the median of 3.
    pub fn fixed(&self, clients: usize) -> (f64, f64) {
        let mut runs: Vec<(f64, f64)> = (0..3).map(|_| self.run(clients, clients)).map(|(_, c, s)| (c, s)).collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut server: Vec<f64> = runs.iter().map(|r| r.1).collect();
        server.sort_by(f64::total_cmp);
        (runs[1].0, server[1])
    }

    pub fn measure(&self, clients: usize, calls: usize, fixed: (f64, f64)) -> Sample {
        let (rate, client, server) = self.run(clients, calls);
        let per = |ns: f64| (ns.max(0.0)) / (calls - clients).max(1) as f64 / 1e3;
        Sample { rate, client_us: per(client - fixed.0), server_us: per(server - fixed.1) }
    }
}

/// One row's paired rounds: each round measured ours and the peer back to back, who goes first
/// alternating with the round (so a drift over the run, or a neighbour's burst, favours neither
/// side), and the row reports the median of the rounds' ratios.
#[derive(Default)]
pub struct Duel {
    pub ours: Vec<Sample>,
    pub peer: Vec<Sample>,
}

impl Duel {
    pub fn round(&mut self, round: usize, ours: impl FnOnce() -> Sample, peer: impl FnOnce() -> Sample) {
        let (o, p) = if round.is_multiple_of(2) {
            let o = ours();
            (o, peer())
        } else {
            let p = peer();
            (ours(), p)
        };
        self.ours.push(o);
        self.peer.push(p);
    }

    /// Each round's ratio, ours over the peer's rate (> 1: we are faster).
    pub fn ratios(&self) -> Vec<f64> {
        self.ours.iter().zip(&self.peer).map(|(o, p)| o.rate / p.rate).collect()
    }

    pub fn ratio(&self) -> f64 {
        median(self.ratios())
    }

    /// "median 0.95x of 5 paired rounds [0.94 0.95 ...]; 41000 vs 43000 calls/s; CPU per call:
    /// client 12.1 vs 10.0 us, server 8.0 vs 7.9 us (medians)".
    pub fn detail(&self, peer: &str) -> String {
        let r = self.ratios();
        let list = r.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join(" ");
        let m = |v: &[Sample], f: fn(&Sample) -> f64| median(v.iter().map(f).collect());
        format!(
            "median of {} paired rounds [{list}], spread {:.0}%; {:.0} vs {:.0} calls/s; CPU per call, ours vs {peer}: client {:.2} vs {:.2} us, server {:.2} vs {:.2} us",
            r.len(),
            spread(&r) * 100.0,
            m(&self.ours, |s| s.rate),
            m(&self.peer, |s| s.rate),
            m(&self.ours, |s| s.client_us),
            m(&self.peer, |s| s.client_us),
            m(&self.ours, |s| s.server_us),
            m(&self.peer, |s| s.server_us),
        )
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if !n.is_multiple_of(2) { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// (max - min) / median.
pub fn spread(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (hi - lo) / median(v.to_vec())
}

/// The GCRA check every Redis row sends (`EVALSHA` of `sha` on `key` at `now`, a limit no call
/// reaches), word by word: `redis-benchmark`'s arguments as they are, redis-rs's through
/// [`command`], so ours, the peer and the raw reference send the same bytes.
pub fn gcra_evalsha(sha: &str, key: &str, now: i64) -> Vec<String> {
    let now = now.to_string();
    ["EVALSHA", sha, "1", key, &now, "check", "1", "1000000000", "1000", "1000000000"].map(String::from).to_vec()
}

/// `words` as a redis-rs command.
pub fn command(words: &[String]) -> redis::Cmd {
    let mut cmd = redis::cmd(&words[0]);
    for word in &words[1..] {
        cmd.arg(word);
    }
    cmd
}
