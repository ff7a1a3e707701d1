//! A proxy that hands replies back a byte at a time, for the readers' tests.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// A proxy on a free loopback port that passes requests to `upstream` as they come and hands
/// every reply back one byte per write (`TCP_NODELAY`, a pause between bytes), so a client
/// reads each reply in many pieces. Its threads end with their connections.
pub fn trickling_proxy(upstream: u16) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { return };
            for s in [&client, &server] {
                s.set_nodelay(true).unwrap();
            }
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c_in, &mut s_out);
            });
            let (mut s_in, mut c_out) = (server, client);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = s_in.read(&mut buf) {
                    for b in &buf[..n] {
                        if c_out.write_all(std::slice::from_ref(b)).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
            });
        }
    });
    port
}
