//! The cluster's reply reading through the engine, against the `Value` route it replaced: a
//! reply that is no error frame decodes where it lies exactly as redis-rs's `Value` decodes it,
//! and an odd reply is `store_unavailable`, never a redirect or a decision (the redirect rules
//! themselves: `redis::engine::tests`).

use std::time::{Duration, Instant};

use super::super::call::{self, ScriptCall};
use super::super::engine::{Exchange, Invoke, Rules, Step};
use super::super::wire::Wire;
use crate::store::{Now, Transform};

fn check(strategy: &crate::Strategy, now: Now) -> ScriptCall {
    call::single("k", now, &Transform::Check { strategy, cost: 3 })
}

fn rules() -> Rules {
    Rules { invoke: Invoke::Functions, durable: None, cluster: true }
}

/// What the cluster path made of a frame that is no error before the engine: redis-rs's
/// `Value`, then [`call::decode_reply`].
fn via_value(call: &ScriptCall, frame: &[u8]) -> String {
    match redis::parse_redis_value(frame) {
        Ok(v) => format!(
            "{:?}",
            call::decode_reply(call, &super::super::engine::tests::from_redis(&v)).map_err(|e| e.code())
        ),
        // A frame redis-rs cannot parse (an integer past i64) failed the call the same way.
        Err(_) => format!("{:?}", Err::<(), _>(crate::ErrorCode::StoreUnavailable)),
    }
}

fn fed(call: &ScriptCall, frame: &[u8]) -> String {
    match Exchange::new(call, rules()).feed(frame) {
        Step::Done(o) => format!("{:?}", o.map_err(|e| e.code())),
        other => format!("{other:?}"),
    }
}

#[test]
fn every_frame_that_is_no_error_decodes_as_the_value_route_did_and_odd_ones_are_store_unavailable() {
    let fixed = crate::Strategy::fixed_window(10, 1000).unwrap();
    let gcra = crate::Strategy::gcra(10, 1000, None).unwrap();
    let count = check(&fixed, Now::At(1_500));
    let six = check(&gcra, Now::Server);
    assert!(matches!(count.shape, call::Shape::WindowCount(_)), "a fixed window on the caller's clock counts");
    let frames: [&[u8]; 13] = [
        b":3\r\n",
        b":10\r\n",
        b":13\r\n",
        b":0\r\n",
        b":-1\r\n",
        b":99999999999999999999\r\n",
        b"*6\r\n:1\r\n:10\r\n:7\r\n:1000\r\n:0\r\n:2000\r\n",
        b"*6\r\n:0\r\n:10\r\n:0\r\n:1000\r\n:250\r\n:2000\r\n",
        b"*6\r\n:2\r\n:0\r\n:2\r\n:0\r\n:0\r\n:50\r\n",
        b"*5\r\n:1\r\n:10\r\n:7\r\n:1000\r\n:0\r\n",
        b"$3\r\nodd\r\n",
        b"$-1\r\n",
        b"+OK\r\n",
    ];
    for call in [&count, &six] {
        for f in frames {
            assert_eq!(fed(call, f), via_value(call, f), "{f:?}");
        }
    }
    // The count replies a fixed window sends decode to decisions; the odd ones are the store's
    // failure, on either shape.
    assert!(fed(&count, b":3\r\n").starts_with("Ok(Single("));
    assert!(fed(&six, frames[6]).starts_with("Ok(Single("));
    for (call, f) in [(&count, &b":-1\r\n"[..]), (&count, b"$3\r\nodd\r\n"), (&six, b":3\r\n"), (&six, frames[8])] {
        assert_eq!(fed(call, f), "Err(StoreUnavailable)", "{f:?}");
    }
}

/// A master whose reply is bytes no RESP reply starts with, or a frame whose integers are not
/// integers, fails the call (`store_unavailable`), never a decision or a redirect: the first is
/// a lost connection to the blocking driver (dropped, never reused: the rest of the reply cannot
/// be found), the second a whole frame, decoded as redis-rs decodes it.
#[test]
fn a_malformed_frame_from_a_socket_is_store_unavailable() {
    use std::io::{Read as _, Write as _};
    let fixed = crate::Strategy::fixed_window(10, 1000).unwrap();
    let gcra = crate::Strategy::gcra(10, 1000, None).unwrap();
    let (count, six) = (check(&fixed, Now::At(1_500)), check(&gcra, Now::Server));
    let cases: [(&ScriptCall, &'static [u8], bool); 4] = [
        (&count, b"@5\r\nodd\r\n", true),
        (&six, b"?1\r\n:1\r\n:2\r\n", true),
        (&count, b":12x\r\n", false),
        (&six, b"*6\r\n:1\r\n:a\r\n:7\r\n:1000\r\n:0\r\n:2000\r\n", false),
    ];
    for (call, reply, lost) in cases {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = s.read(&mut [0u8; 4096]).unwrap();
            s.write_all(reply).unwrap();
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut conn =
            Wire::connect(&crate::redis::socket::Target::Tcp("127.0.0.1".into(), port), &[], deadline).unwrap();
        let got = conn.drive(&mut Exchange::new(call, rules()), deadline);
        server.join().unwrap();
        match (got, lost) {
            (Err(_), true) => {}
            (Ok((Step::Done(Err(e)), _)), false) => {
                assert_eq!(e.code(), crate::ErrorCode::StoreUnavailable, "{reply:?}")
            }
            (other, _) => panic!("{reply:?} read as {other:?}"),
        }
    }
}

/// The size of the future an async fn of four arguments returns.
fn future_size<A, B, C, D, F>(_: fn(A, B, C, D) -> F) -> usize {
    std::mem::size_of::<F>()
}

/// Every async call builds [`super::Router::run`]'s future and moves it (into the store's box,
/// under its timeout), so a cold path that keeps a large state across an await makes every call
/// pay for it: an `if let` on the refresh a failed connect waits for once kept the refresh's
/// whole state (its connects and TLS handshakes) there, 4.7 KB against 0.6 KB, and about half
/// the client's instructions per call with 50 in flight went to moving it.
#[test]
fn a_calls_future_holds_no_cold_paths_state() {
    type Run<'a> = &'a std::sync::Arc<super::Router>;
    let size = future_size::<Run<'_>, u16, Exchange<'_>, Option<&tokio::runtime::Handle>, _>(
        super::Router::run::<Exchange<'_>>,
    );
    assert!(size <= 1024, "Router::run's future is {size} bytes");
}

/// A fake cluster node on a loopback port: each command it reads (arguments, upper-cased first)
/// is counted by name and answered by `answer` (`None`: never answered, the connection held;
/// no bytes: the connection closed).
struct FakeNode {
    port: u16,
    seen: std::sync::Arc<parking_lot::Mutex<Vec<String>>>,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl FakeNode {
    fn start(answer: impl Fn(&[String], &[String]) -> Option<Vec<u8>> + Send + Sync + 'static) -> FakeNode {
        use std::io::{BufRead as _, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (log, answer, count) = (seen.clone(), std::sync::Arc::new(answer), accepted.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (log, answer) = (log.clone(), answer.clone());
                std::thread::spawn(move || {
                    let mut out = stream.try_clone().unwrap();
                    let mut r = std::io::BufReader::new(stream);
                    let mut line = String::new();
                    let mut read_line = |r: &mut std::io::BufReader<std::net::TcpStream>| {
                        line.clear();
                        r.read_line(&mut line).ok().filter(|n| *n > 0)?;
                        Some(line.trim_end().to_string())
                    };
                    while let Some(head) = read_line(&mut r) {
                        let n: usize = head.strip_prefix('*').and_then(|n| n.parse().ok()).expect("an array");
                        let mut args = Vec::new();
                        for _ in 0..n {
                            let len: usize = read_line(&mut r).and_then(|l| l[1..].parse().ok()).expect("a bulk");
                            let mut arg = vec![0; len + 2];
                            r.read_exact(&mut arg).unwrap();
                            args.push(String::from_utf8_lossy(&arg[..len]).into_owned());
                        }
                        args[0] = args[0].to_uppercase();
                        let before = log.lock().clone();
                        log.lock().push(args[0].clone());
                        match answer(&args, &before) {
                            Some(reply) if reply.is_empty() => return,
                            Some(reply) => out.write_all(&reply).unwrap(),
                            // Held: the rest of this connection is never answered.
                            None => std::thread::sleep(Duration::from_secs(3600)),
                        }
                    }
                });
            }
        });
        FakeNode { port, seen, accepted }
    }

    /// Connections accepted so far.
    fn connections(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn count(&self, command: &str) -> usize {
        self.seen.lock().iter().filter(|c| *c == command).count()
    }
}

/// `CLUSTER SLOTS` naming the node on `a` as the master of `slot`, and `b` of every other.
fn slots_reply(slot: u16, a: u16, b: u16) -> Vec<u8> {
    let range =
        |start: u16, end: u16, port: u16| format!("*3\r\n:{start}\r\n:{end}\r\n*2\r\n$9\r\n127.0.0.1\r\n:{port}\r\n");
    let mut ranges = vec![range(slot, slot, a)];
    if slot > 0 {
        ranges.push(range(0, slot - 1, b));
    }
    if slot < 16383 {
        ranges.push(range(slot + 1, 16383, b));
    }
    format!("*{}\r\n{}", ranges.len(), ranges.concat()).into_bytes()
}

/// After a `MOVED`, the next call goes straight to the slot's new master, though nothing else
/// has changed the map: the `MOVED` learnt moves the slot. Node A serves key `k`'s slot and node
/// B every other; once both serve calls on the runtime's own connections, A answers a script call
/// with `MOVED` to B, and never answers the map's refresh that the `MOVED` starts (so only the
/// `MOVED` learnt can have moved the slot; a router that did not learn it would send the next
/// call to A again). Calls are awaited on the runtime (its own connections) and from a plain
/// caller (the store's). Then B drops the connection a call was sent on: the next call does not
/// take it again (the call retired it), and the runtime connects to B again.
#[test]
fn after_a_moved_the_next_call_goes_to_the_new_master_and_a_retired_connection_is_not_taken_again() {
    use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
    let slot = super::slot::slot(b"k");
    let other = ["j", "x", "y"].into_iter().find(|k| super::slot::slot(k.as_bytes()) != slot).unwrap();
    let ports = std::sync::Arc::new((AtomicU16::new(0), AtomicU16::new(0)));
    let moved = std::sync::Arc::new(AtomicBool::new(false));
    let drop_next = std::sync::Arc::new(AtomicBool::new(false));
    let d = drop_next.clone();
    let b = FakeNode::start(move |args, _| match args[0].as_str() {
        "FCALL" if d.swap(false, Ordering::SeqCst) => Some(Vec::new()),
        "FCALL" => Some(b":1\r\n".to_vec()),
        other => panic!("B was sent {other}"),
    });
    let (p, m) = (ports.clone(), moved.clone());
    let a = FakeNode::start(move |args, _| match (args[0].as_str(), m.load(Ordering::SeqCst)) {
        ("CLUSTER", false) => Some(slots_reply(slot, p.0.load(Ordering::SeqCst), p.1.load(Ordering::SeqCst))),
        ("CLUSTER", true) => None,
        ("FCALL", false) => Some(b":1\r\n".to_vec()),
        ("FCALL", true) => Some(format!("-MOVED {slot} 127.0.0.1:{}\r\n", p.1.load(Ordering::SeqCst)).into_bytes()),
        (other, _) => panic!("A was sent {other}"),
    });
    ports.0.store(a.port, Ordering::SeqCst);
    ports.1.store(b.port, Ordering::SeqCst);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let plan = crate::redis::RedisOptions {
        urls: vec![format!("redis://127.0.0.1:{}", a.port)],
        mode: crate::redis::RedisMode::Cluster,
        ..Default::default()
    }
    .plan()
    .unwrap();
    let router = rt.block_on(super::Router::connect(&plan, Duration::from_secs(2))).unwrap();
    let fixed = crate::Strategy::fixed_window(10, 1000).unwrap();
    let run = |key: &str, local: bool| {
        let call = call::single(key, Now::At(1_500), &Transform::Check { strategy: &fixed, cost: 3 });
        rt.block_on(async {
            let (s, x) = router.exchange(Invoke::Functions, None, &call);
            let handle = tokio::runtime::Handle::current();
            let out = router.run(s, x, local.then_some(&handle)).await.map(|_| ()).map_err(|e| e.to_string());
            // Lets a connect started by the call run.
            tokio::time::sleep(Duration::from_millis(5)).await;
            out
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while router.local_connections(rt.handle().id()) < 2 {
        assert!(Instant::now() < deadline, "the runtime's own connections never came up");
        for (key, local) in [("k", true), (other, true), ("k", false), (other, false)] {
            assert_eq!(run(key, local), Ok(()));
        }
    }
    moved.store(true, Ordering::SeqCst);
    let (a0, b0) = (a.count("FCALL"), b.count("FCALL"));
    assert_eq!(run("k", true), Ok(()), "the MOVED is followed");
    assert_eq!((a.count("FCALL") - a0, b.count("FCALL") - b0), (1, 1));
    for (i, local) in [true, true, false, true].into_iter().enumerate() {
        assert_eq!(run("k", local), Ok(()), "call {i} after the MOVED");
        assert_eq!((a.count("FCALL") - a0, b.count("FCALL") - b0), (1, 2 + i), "call {i} went to B alone");
    }
    assert_eq!(router.local_connections(rt.handle().id()), 2, "B's own connection is up");
    drop_next.store(true, Ordering::SeqCst);
    assert!(run("k", true).is_err(), "a call whose connection closed fails (never sent again)");
    assert_eq!(router.local_connections(rt.handle().id()), 1, "and retires it");
    let accepted = b.connections();
    assert_eq!(run("k", true), Ok(()), "the next call takes the store's connection");
    let deadline = Instant::now() + Duration::from_secs(10);
    while router.local_connections(rt.handle().id()) < 2 {
        assert!(Instant::now() < deadline, "the runtime never connected to B again");
        assert_eq!(run("k", true), Ok(()));
    }
    assert!(b.connections() > accepted, "a new connection");
    router.close();
}
