//! The proxy against a tiny RESP server that counts what it executes: each fault does what it
//! says to the client and to the server, and the binary's control protocol drives the same.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use throttlekit_faultproxy::{Fault, FaultProxy, Rule, resp};

/// A server that answers every request with `:<n>` where n counts the requests it executed.
struct Counter {
    addr: SocketAddr,
    executed: Arc<AtomicU64>,
}

fn counter() -> Counter {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let executed = Arc::new(AtomicU64::new(0));
    let count = executed.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(len) = resp::frame_len(&buf) {
                        buf.drain(..len);
                        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                        if stream.write_all(format!(":{n}\r\n").as_bytes()).is_err() {
                            return;
                        }
                    }
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    Counter { addr, executed }
}

fn request(cmd: &str) -> Vec<u8> {
    let words: Vec<&str> = cmd.split(' ').collect();
    let mut out = format!("*{}\r\n", words.len());
    for w in words {
        out += &format!("${}\r\n{w}\r\n", w.len());
    }
    out.into_bytes()
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// What a client saw after sending one request.
#[derive(Debug, PartialEq)]
enum Seen {
    Reply(String),
    Closed,
    Reset,
    Nothing,
}

fn call(s: &mut TcpStream, cmd: &str) -> Seen {
    if s.write_all(&request(cmd)).is_err() {
        return Seen::Reset;
    }
    read_reply(s)
}

fn read_reply(s: &mut TcpStream) -> Seen {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 256];
    loop {
        if let Some(len) = resp::frame_len(&buf) {
            return Seen::Reply(String::from_utf8_lossy(&buf[..len]).trim().to_string());
        }
        match s.read(&mut chunk) {
            Ok(0) => return Seen::Closed,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Seen::Reset,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return Seen::Nothing,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// A counter server, a proxy in front of it, and a client through the proxy whose first request
/// was answered.
fn answered_once() -> (Counter, FaultProxy, TcpStream) {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    let mut s = connect(proxy.addr());
    assert_eq!(call(&mut s, "GET a"), Seen::Reply(":1".into()));
    (server, proxy, s)
}

/// Waits (bounded) until `f` holds; the proxy works on its own thread.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(5), "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn with_no_rule_every_request_and_reply_passes() {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    let mut s = connect(proxy.addr());
    for i in 1..=3 {
        assert_eq!(call(&mut s, "FCALL f 1 k"), Seen::Reply(format!(":{i}")));
    }
    // Pipelined requests split across writes still come back one reply each.
    let mut two = request("GET a");
    two.extend(request("GET b"));
    s.write_all(&two[..7]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    s.write_all(&two[7..]).unwrap();
    assert_eq!(read_reply(&mut s), Seen::Reply(":4".into()));
    let stats = proxy.stats();
    assert_eq!((stats.connections, stats.commands, stats.scripts, stats.faults), (1, 5, 3, 0));
}

#[test]
fn drop_reply_lets_one_script_call_in_five_execute_and_loses_its_reply() {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    proxy.set(vec![Rule::new(Fault::DropReply).scripts().every(5)]);
    let mut s = connect(proxy.addr());
    let (mut replies, mut closed) = (0, 0);
    for _ in 0..20 {
        // Non-script commands are not counted by the rule and always pass.
        assert!(matches!(call(&mut s, "GET x"), Seen::Reply(_)));
        match call(&mut s, "EVALSHA abc 1 k") {
            Seen::Reply(_) => replies += 1,
            Seen::Closed => {
                closed += 1;
                s = connect(proxy.addr());
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((replies, closed), (16, 4));
    // Every script call was executed, the lost ones included: 20 scripts + 20 GETs.
    eventually("40 executed", || server.executed.load(Ordering::SeqCst) == 40);
    assert_eq!(proxy.stats().faults, 4);
    assert_eq!(proxy.stats().scripts, 20);
}

#[test]
fn drop_request_forwards_only_the_first_bytes_and_nothing_executes() {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    proxy.set(vec![Rule::new(Fault::DropRequest(6)).times(1)]);
    let mut s = connect(proxy.addr());
    assert_eq!(call(&mut s, "FCALL f 1 k"), Seen::Closed);
    let mut s = connect(proxy.addr());
    assert_eq!(call(&mut s, "FCALL f 1 k"), Seen::Reply(":1".into()));
    assert_eq!(server.executed.load(Ordering::SeqCst), 1);
}

#[test]
fn reset_sends_an_rst_and_forwards_nothing() {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    proxy.set(vec![Rule::new(Fault::Reset).commands(&["fcall"])]);
    let mut s = connect(proxy.addr());
    assert_eq!(call(&mut s, "GET a"), Seen::Reply(":1".into()));
    assert_eq!(call(&mut s, "FCALL f 1 k"), Seen::Reset);
    assert_eq!(server.executed.load(Ordering::SeqCst), 1);
}

#[test]
fn delay_holds_the_request_and_stall_holds_the_connection() {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    proxy.set(vec![Rule::new(Fault::Delay(Duration::from_millis(150))).times(1)]);
    let mut s = connect(proxy.addr());
    let start = Instant::now();
    assert_eq!(call(&mut s, "GET a"), Seen::Reply(":1".into()));
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(server.executed.load(Ordering::SeqCst), 1);

    proxy.set(vec![Rule::new(Fault::Stall(Duration::from_millis(150))).times(1)]);
    let start = Instant::now();
    assert_eq!(call(&mut s, "GET a"), Seen::Reply(":2".into()));
    assert!(start.elapsed() >= Duration::from_millis(150));
}

/// A held connection waits without spinning. A stall holds its request from the moment it
/// stalls, and the connection's task used to wake for that (long due) request on every turn, so
/// the proxy's one thread spun for the whole stall, competing on a loaded machine with the
/// client whose timed-out read had to run (`redis_standalone.rs`, `stall_past_the_timeout`,
/// seen ~100 ms past its bound at a load average of 8.5). A partition holding a delayed request
/// did the same once the delay was due.
#[test]
fn a_stalled_or_partitioned_connection_waits_without_spinning() {
    let (_server, proxy, mut s) = answered_once();

    proxy.set(vec![Rule::new(Fault::Stall(Duration::from_millis(300))).times(1)]);
    let before = proxy.stats().wakeups;
    assert_eq!(call(&mut s, "GET a"), Seen::Reply(":2".into()));
    let during = proxy.stats().wakeups - before;
    // A handful of events (the request, the stall's timer, the reply); a spin is thousands.
    assert!(during < 50, "{during} wake-ups for one stalled request");

    proxy.set(vec![Rule::new(Fault::Delay(Duration::from_millis(20))).times(1)]);
    proxy.partition(true);
    let before = proxy.stats().wakeups;
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    assert_eq!(call(&mut s, "GET a"), Seen::Nothing);
    let during = proxy.stats().wakeups - before;
    assert!(during < 50, "{during} wake-ups while a due request waited out a partition");
    proxy.partition(false);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(read_reply(&mut s), Seen::Reply(":3".into()));
}

#[test]
fn black_hole_keeps_the_connection_open_and_answers_nothing() {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    proxy.set(vec![Rule::new(Fault::BlackHole)]);
    let mut s = connect(proxy.addr());
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    assert_eq!(call(&mut s, "GET a"), Seen::Nothing);
    proxy.clear();
    // Cleared rules do not revive a black-holed connection, but a new one works.
    assert_eq!(read_reply(&mut s), Seen::Nothing);
    assert_eq!(server.executed.load(Ordering::SeqCst), 0);
    let mut s = connect(proxy.addr());
    assert_eq!(call(&mut s, "GET a"), Seen::Reply(":1".into()));
}

#[test]
fn connection_rules_select_connections() {
    let server = counter();
    let proxy = FaultProxy::start(server.addr).unwrap();
    proxy.set(vec![Rule::new(Fault::Reset).connections().every(2)]);
    let mut first = connect(proxy.addr());
    let mut second = connect(proxy.addr());
    assert_eq!(call(&mut first, "GET a"), Seen::Reply(":1".into()));
    assert!(matches!(call(&mut second, "GET a"), Seen::Reset | Seen::Closed));
    proxy.set(vec![Rule::new(Fault::DropReply).connections()]);
    let mut third = connect(proxy.addr());
    assert_eq!(call(&mut third, "GET a"), Seen::Closed);
    eventually("the dropped reply's command ran", || server.executed.load(Ordering::SeqCst) == 2);
}

#[test]
fn partition_holds_traffic_until_lifted_and_kill_closes_connections() {
    let (server, proxy, mut s) = answered_once();
    proxy.partition(true);
    s.set_read_timeout(Some(Duration::from_millis(150))).unwrap();
    assert_eq!(call(&mut s, "GET a"), Seen::Nothing);
    assert_eq!(server.executed.load(Ordering::SeqCst), 1);
    proxy.partition(false);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(read_reply(&mut s), Seen::Reply(":2".into()));
    eventually("one live connection", || proxy.stats().live == 1);
    proxy.kill_connections();
    assert_eq!(read_reply(&mut s), Seen::Closed);
    eventually("no live connection", || proxy.stats().live == 0);
}

#[test]
fn the_binary_is_driven_by_its_control_protocol() {
    let server = counter();
    let mut child = Command::new(env!("CARGO_BIN_EXE_throttlekit-faultproxy"))
        .args(["--route", &server.addr.to_string(), "--rule", "drop_reply scope=scripts every=2"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut route = None;
    let mut control = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "route" => route = Some(words[1].parse::<SocketAddr>().unwrap()),
            "control" => control = Some(words[1].parse::<SocketAddr>().unwrap()),
            "ready" => break,
            _ => panic!("{line}"),
        }
    }
    let (route, control) = (route.unwrap(), control.unwrap());
    let mut ctl = connect(control);
    let mut ctl_lines = BufReader::new(ctl.try_clone().unwrap()).lines();
    let mut say = |line: &str| {
        writeln!(ctl, "{line}").unwrap();
        ctl_lines.next().unwrap().unwrap()
    };
    let mut s = connect(route);
    assert_eq!(call(&mut s, "FCALL f 1 k"), Seen::Reply(":1".into()));
    assert_eq!(call(&mut s, "FCALL f 1 k"), Seen::Closed);
    assert_eq!(say("set reset scope=connections"), "ok");
    let mut s = connect(route);
    assert!(matches!(call(&mut s, "GET a"), Seen::Reset | Seen::Closed));
    assert_eq!(say("clear"), "ok");
    let mut s = connect(route);
    assert_eq!(call(&mut s, "GET a"), Seen::Reply(":3".into()));
    assert_eq!(say("stats"), "ok connections=3 live=1 commands=3 scripts=2 faults=2");
    assert!(say("set explode").starts_with("err "));
    assert_eq!(say("quit"), "ok");
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_replication_link_passes_untouched() {
    // An upstream that echoes every byte back, framed or not.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 || stream.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let proxy = FaultProxy::start(addr).unwrap();
    proxy.set(vec![Rule::new(Fault::BlackHole)]);
    let mut s = connect(proxy.addr());
    // PSYNC itself is exempt, and so is everything after it: an RDB payload without its CRLF.
    let mut sent = request("PSYNC ? -1");
    sent.extend_from_slice(b"$3\r\nabc");
    s.write_all(&sent).unwrap();
    let mut got = vec![0u8; sent.len()];
    s.read_exact(&mut got).unwrap();
    assert_eq!(got, sent);
    proxy.kill_connections();
    s.write_all(b"more").unwrap();
    let mut more = [0u8; 4];
    s.read_exact(&mut more).unwrap();
    assert_eq!(&more, b"more");
}
