//! The async driver's tests: calls queued in one turn share a write, a write the socket cannot
//! take whole is finished in order, pushes are dropped wherever they lie, a reply larger than the
//! read buffer is handed out whole, and a sequential call is written by its caller. Helpers here serve [`super::super::batch`]'s tests too.

use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::task::{Context, Waker};

use super::*;

pub(crate) type Call = Pin<Box<dyn Future<Output = Result<Vec<u8>>>>>;

/// A `Pipelined` on a current-thread runtime, connected to a plain listener whose accepted
/// socket the test reads and writes itself.
pub(crate) fn pair(rt: &tokio::runtime::Runtime) -> (Pipelined, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let conn =
        rt.block_on(Pipelined::connect(&Target::Tcp("127.0.0.1".into(), port), &[], Duration::from_secs(5))).unwrap();
    (conn, listener.accept().unwrap().0)
}

/// Queues a call that sends `bytes` (polled once, so it queues without the runtime running).
pub(crate) fn queue(conn: &Pipelined, bytes: Vec<u8>) -> Call {
    let conn = conn.clone();
    let mut call: Call = Box::pin(async move { conn.request(1, |out| out.extend_from_slice(&bytes)).await });
    assert!(call.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    call
}

/// Whatever the server side can read right now, without waiting.
pub(crate) fn readable_now(server: &mut std::net::TcpStream) -> Vec<u8> {
    server.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match server.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    server.set_nonblocking(false).unwrap();
    got
}

pub(crate) fn ping(i: usize) -> Vec<u8> {
    let arg = i.to_string();
    format!("*2\r\n$4\r\nECHO\r\n${}\r\n{arg}\r\n", arg.len()).into_bytes()
}

/// Calls queued in one turn of the runtime, without it running its driver: the first
/// `WRITE_EVERY - 1` stay queued, the one that makes `WRITE_EVERY` writes them all at once,
/// in order, and each call then gets its own reply.
#[test]
fn the_call_that_fills_a_batch_writes_it_without_the_driver() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (conn, mut server) = pair(&rt);
    let mut calls: Vec<Call> = (0..WRITE_EVERY - 1).map(|i| queue(&conn, ping(i))).collect();
    assert!(readable_now(&mut server).is_empty(), "written before the batch was full");
    calls.push(queue(&conn, ping(WRITE_EVERY - 1)));
    let expected: Vec<u8> = (0..WRITE_EVERY).flat_map(ping).collect();
    let mut got = readable_now(&mut server);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while got.len() < expected.len() && std::time::Instant::now() < deadline {
        got.extend(readable_now(&mut server));
    }
    assert_eq!(got, expected, "the batch, in queue order");
    // One more call goes to the driver, as before.
    calls.push(queue(&conn, ping(WRITE_EVERY)));
    for i in 0..=WRITE_EVERY {
        server.write_all(format!(":{i}\r\n").as_bytes()).unwrap();
    }
    rt.block_on(async {
        for (i, call) in calls.into_iter().enumerate() {
            assert_eq!(call.await.unwrap(), format!(":{i}\r\n").into_bytes());
        }
    });
    assert_eq!(readable_now(&mut server), ping(WRITE_EVERY), "the driver wrote the last call");
}

/// Calls made by tasks that run in one turn of a multi-thread runtime's worker share one
/// write: the driver, woken by the first call and run next by tokio (its LIFO slot), steps
/// behind the tasks already queued before it writes ([`behind_the_queue`]).
#[test]
fn calls_made_in_one_turn_of_a_multi_thread_worker_share_a_write() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (conn, mut server) = pair(&rt);
    let calls = 8;
    let answer = std::thread::spawn(move || {
        let expected: Vec<u8> = (0..calls).flat_map(ping).collect();
        let mut got = vec![0u8; expected.len()];
        server.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        server.read_exact(&mut got).expect("every call's bytes");
        for i in 0..calls {
            server.write_all(format!(":{i}\r\n").as_bytes()).unwrap();
        }
        server
    });
    let c = conn.clone();
    rt.block_on(async move {
        tokio::spawn(async move {
            let tasks: Vec<_> = (0..calls)
                .map(|i| {
                    let c = c.clone();
                    tokio::spawn(async move { c.request(1, |out| out.extend_from_slice(&ping(i))).await })
                })
                .collect();
            for t in tasks {
                t.await.unwrap().unwrap();
            }
        })
        .await
        .unwrap();
    });
    let _server = answer.join().unwrap();
    let writes = conn.owner.shared.state.lock().writes;
    assert_eq!(writes, 1, "{calls} calls made in one turn took {writes} writes");
}

/// More bytes than the socket takes at once: a call's write stops short, the rest stays
/// queued ahead of later calls, and the driver finishes it once the server reads, so the
/// server sees every call's bytes whole and in order.
#[test]
fn a_write_the_socket_cannot_take_whole_is_finished_in_order() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (conn, mut server) = pair(&rt);
    // 200 calls of 100 kB: more than loopback buffers hold.
    let call_bytes = |i: usize| {
        let arg = format!("{i:06}").repeat(100_000 / 6);
        format!("*2\r\n$4\r\nECHO\r\n${}\r\n{arg}\r\n", arg.len()).into_bytes()
    };
    let n = 200;
    let expected: Vec<u8> = (0..n).flat_map(call_bytes).collect();
    let reader = std::thread::spawn(move || {
        // Not reading for a while lets the client's writes fill the socket.
        std::thread::sleep(Duration::from_millis(200));
        // Bytes lost on the way fail the test at this timeout rather than hang it.
        server.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = vec![0u8; expected.len()];
        server.read_exact(&mut got).expect("every call's bytes");
        assert!(got == expected, "the server read the calls' bytes out of order or torn");
        for i in 0..n {
            server.write_all(format!(":{i}\r\n").as_bytes()).unwrap();
        }
        server
    });
    let calls: Vec<Call> = (0..n).map(|i| queue(&conn, call_bytes(i))).collect();
    rt.block_on(async {
        for (i, call) in calls.into_iter().enumerate() {
            assert_eq!(call.await.unwrap(), format!(":{i}\r\n").into_bytes());
        }
    });
    let _server = reader.join().unwrap();
}

/// A RESP3 push answers no call, wherever it lies: before any call is owed a reply, between
/// two calls' replies, among the frames of one call's pipeline, split over reads. Each call
/// gets its own frames and the connection stays in step.
#[test]
fn pushes_are_dropped_wherever_they_lie() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (conn, mut server) = pair(&rt);
    let push = b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n%1\r\n+a\r\n#t\r\n";
    server.write_all(push).unwrap();
    let one = queue(&conn, ping(1));
    let two = {
        let conn = conn.clone();
        let mut call: Call =
            Box::pin(async move { conn.request(2, |out| out.extend([ping(2), ping(3)].concat())).await });
        assert!(call.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
        call
    };
    let mut replies = Vec::new();
    replies.extend_from_slice(b":1\r\n");
    replies.extend_from_slice(push);
    replies.extend_from_slice(b"_\r\n");
    replies.extend_from_slice(push);
    replies.extend_from_slice(b",1.5\r\n");
    replies.extend_from_slice(push);
    for piece in replies.chunks(3) {
        server.write_all(piece).unwrap();
    }
    rt.block_on(async {
        assert_eq!(one.await.unwrap(), b":1\r\n");
        assert_eq!(two.await.unwrap(), b"_\r\n,1.5\r\n");
    });
    let three = queue(&conn, ping(4));
    server.write_all(b":4\r\n").unwrap();
    assert_eq!(rt.block_on(three).unwrap(), b":4\r\n", "the connection is still in step");
}

/// A reply larger than the read buffer, arriving in pieces, is handed out whole once its last
/// byte is in (the buffer grows for it), and the replies around it go to their own calls.
#[test]
fn a_reply_larger_than_the_read_buffer_is_handed_out_whole() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (conn, mut server) = pair(&rt);
    let calls: Vec<Call> = (0..3).map(|i| queue(&conn, ping(i))).collect();
    let big = "x".repeat(INITIAL * 2 + 7);
    let long = format!("${}\r\n{big}\r\n", big.len()).into_bytes();
    let replies = [b":0\r\n".to_vec(), long.clone(), b":2\r\n".to_vec()].concat();
    for piece in replies.chunks(INITIAL / 3) {
        server.write_all(piece).unwrap();
    }
    let got: Vec<Vec<u8>> = rt.block_on(async {
        let mut got = Vec::new();
        for call in calls {
            got.push(call.await.unwrap());
        }
        got
    });
    assert_eq!(got, [b":0\r\n".to_vec(), long, b":2\r\n".to_vec()]);
    let next = queue(&conn, ping(3));
    server.write_all(b":3\r\n").unwrap();
    assert_eq!(rt.block_on(next).unwrap(), b":3\r\n", "the connection is still in step");
}

/// What the server side reads until it has `want` bytes, or 10 s passed (a bound for a failing
/// test, never reached by a passing one).
pub(crate) fn read_until(server: &mut std::net::TcpStream, want: usize) -> Vec<u8> {
    let mut got = readable_now(server);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while got.len() < want && std::time::Instant::now() < deadline {
        got.extend(readable_now(server));
    }
    got
}

/// A call made while no other is in flight, after a write that carried one call, is written by
/// its caller as it is queued, before the runtime runs its driver; the first call on the
/// connection, and a call queued while another is in flight, wait for the driver, which batches
/// them with the turn's other calls.
#[test]
fn a_sequential_call_is_written_by_its_caller() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (conn, mut server) = pair(&rt);
    let first = queue(&conn, ping(0));
    assert!(readable_now(&mut server).is_empty(), "the first call was written without the driver");
    server.write_all(b":0\r\n").unwrap();
    assert_eq!(rt.block_on(first).unwrap(), b":0\r\n");
    assert_eq!(read_until(&mut server, ping(0).len()), ping(0), "the driver wrote the first call");

    let second = queue(&conn, ping(1));
    assert_eq!(read_until(&mut server, ping(1).len()), ping(1), "the sequential call, written by its caller");
    let third = queue(&conn, ping(2));
    assert!(readable_now(&mut server).is_empty(), "a call queued behind one in flight was written without the driver");
    server.write_all(b":1\r\n:2\r\n").unwrap();
    rt.block_on(async {
        assert_eq!(second.await.unwrap(), b":1\r\n");
        assert_eq!(third.await.unwrap(), b":2\r\n");
    });
    assert_eq!(read_until(&mut server, ping(2).len()), ping(2), "the driver wrote the third call");
    assert_eq!(conn.owner.shared.state.lock().writes, 3);
}
