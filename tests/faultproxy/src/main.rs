//! `throttlekit-faultproxy --route [LISTEN=]UPSTREAM ... [--control ADDR]`
//!
//! Starts one listener per route (LISTEN defaults to 127.0.0.1:0), prints
//! `route LISTEN UPSTREAM` per route, then `control ADDR`, then `ready`, and serves the control
//! protocol (see the library's `control` module) on ADDR, one connection at a time or many.
//! It runs until its control connection sends `quit` or it is killed (tests kill it by PID).
//! `--rule "drop_reply scope=scripts every=5"` arms a rule from the start. `--protocol postgres`
//! frames Postgres's wire instead of RESP (one route, on a free port).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use throttlekit_faultproxy::{FaultProxy, control};

fn usage() -> ! {
    eprintln!(
        "usage: throttlekit-faultproxy --route [LISTEN=]UPSTREAM ... [--control ADDR] [--rule RULE ...] [--protocol resp|postgres]"
    );
    std::process::exit(2);
}

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap_or_else(|_| {
        eprintln!("not an address: {text}");
        usage()
    })
}

fn main() {
    let mut routes = Vec::new();
    let mut control_addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut rules = Vec::new();
    let mut postgres = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--route" => routes.push(match value.split_once('=') {
                Some((l, u)) => (addr(l), addr(u)),
                None => (addr("127.0.0.1:0"), addr(&value)),
            }),
            "--control" => control_addr = addr(&value),
            "--rule" => rules.push(value),
            "--protocol" => match value.as_str() {
                "resp" => postgres = false,
                "postgres" => postgres = true,
                _ => usage(),
            },
            _ => usage(),
        }
    }
    if routes.is_empty() {
        usage();
    }
    if postgres && routes.len() != 1 {
        usage();
    }
    let started = if postgres { FaultProxy::start_postgres(routes[0].1) } else { FaultProxy::start_routes(&routes) };
    let proxy = Arc::new(started.unwrap_or_else(|e| {
        eprintln!("faultproxy: {e}");
        std::process::exit(1)
    }));
    for rule in &rules {
        let reply = control::execute(&proxy, &format!("add {rule}"));
        if reply != "ok" {
            eprintln!("faultproxy: --rule {rule}: {reply}");
            std::process::exit(2);
        }
    }
    let listener = TcpListener::bind(control_addr).unwrap_or_else(|e| {
        eprintln!("faultproxy: control: {e}");
        std::process::exit(1)
    });
    let mut out = std::io::stdout().lock();
    for (l, u) in proxy.routes() {
        let _ = writeln!(out, "route {l} {u}");
    }
    let _ = writeln!(out, "control {}", listener.local_addr().unwrap());
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    drop(out);
    for stream in listener.incoming().flatten() {
        let proxy = proxy.clone();
        std::thread::spawn(move || {
            let Ok(read) = stream.try_clone() else { return };
            let mut write = stream;
            for line in BufReader::new(read).lines() {
                let Ok(line) = line else { return };
                if line.trim() == "quit" {
                    let _ = writeln!(write, "ok");
                    std::process::exit(0);
                }
                if writeln!(write, "{}", control::execute(&proxy, &line)).is_err() {
                    return;
                }
            }
        });
    }
}
