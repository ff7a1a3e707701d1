//! One proxied connection: a single task that reads both sockets, cuts the client's bytes into
//! requests and the server's into replies, and applies the fault a rule chose for a request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use crate::pg::{self, Pg};
use crate::{Fault, Protocol, Shared, resp};

pub(crate) async fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>, protocol: Protocol) {
    loop {
        let Ok((client, _)) = listener.accept().await else { continue };
        let fault = shared.on_connection();
        let shared = shared.clone();
        tokio::spawn(async move {
            shared.live.fetch_add(1, Ordering::Relaxed);
            serve(client, upstream, &shared, fault, protocol).await;
            shared.live.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Closes `client` with an RST (SO_LINGER 0) instead of a FIN.
fn reset(client: TcpStream) {
    let _ = client.set_zero_linger();
    drop(client);
}

async fn serve(
    client: TcpStream,
    upstream: SocketAddr,
    shared: &Shared,
    conn_fault: Option<Fault>,
    protocol: Protocol,
) {
    if conn_fault == Some(Fault::Reset) {
        return reset(client);
    }
    let Ok(server) = TcpStream::connect(upstream).await else { return };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let mut c = Conn {
        client,
        server,
        cbuf: Vec::with_capacity(4096),
        sbuf: Vec::with_capacity(4096),
        forwarded: 0,
        replies: 0,
        drop_reply_at: None,
        black_hole: conn_fault == Some(Fault::BlackHole),
        every_delay: match conn_fault {
            Some(Fault::Delay(d)) => Some(d),
            _ => None,
        },
        first_fault: match conn_fault {
            Some(f @ (Fault::Stall(_) | Fault::DropRequest(_) | Fault::DropReply)) => Some(f),
            _ => None,
        },
        held: None,
        stall_until: None,
        raw: false,
        pg: (protocol == Protocol::Postgres).then(Pg::default),
    };
    if let Err(Closed::Reset) = c.run(shared).await {
        reset(c.client);
    }
}

struct Conn {
    client: TcpStream,
    server: TcpStream,
    /// Client bytes not yet forwarded (a partial request, or requests waiting behind a fault).
    cbuf: Vec<u8>,
    /// Server bytes not yet forwarded (a partial reply).
    sbuf: Vec<u8>,
    /// Requests forwarded whole so far; replies answer them in order.
    forwarded: u64,
    replies: u64,
    /// The index of the request whose reply is to be swallowed, closing the connection.
    drop_reply_at: Option<u64>,
    black_hole: bool,
    /// A connection-level delay on every request.
    every_delay: Option<Duration>,
    /// A connection-level fault for its first request.
    first_fault: Option<Fault>,
    /// A delayed request and when it may go.
    held: Option<(Vec<u8>, Instant)>,
    stall_until: Option<Instant>,
    /// A replication link (`SYNC`/`PSYNC`): its bytes are copied as they are, with no fault.
    raw: bool,
    /// Postgres's framing instead of RESP's (`FaultProxy::start_postgres`).
    pg: Option<Pg>,
}

/// Why a connection ended: closed with a FIN (both sides), or the client is to get an RST.
enum Closed {
    Fin,
    Reset,
}

impl From<std::io::Error> for Closed {
    fn from(_: std::io::Error) -> Closed {
        Closed::Fin
    }
}

impl Conn {
    async fn run(&mut self, shared: &Shared) -> Result<(), Closed> {
        let mut kill = shared.kill.subscribe();
        let mut partition = shared.partition.subscribe();
        loop {
            let now = Instant::now();
            if self.stall_until.is_some_and(|t| t <= now) {
                self.stall_until = None;
            }
            let paused = *partition.borrow() || self.black_hole || self.stall_until.is_some();
            if !paused {
                self.forward_requests(shared).await?;
                // A stall or black hole chosen just now must stop replies too.
            }
            if self.raw {
                return self.pipe().await;
            }
            let paused = *partition.borrow() || self.black_hole || self.stall_until.is_some();
            if self.black_hole {
                self.cbuf.clear();
                self.sbuf.clear();
            }
            // A held request wakes the task only when it can go: while the connection is
            // paused its time may be long past (a stall holds its request from the moment it
            // stalls), and waking for it there spun this task, and the proxy's only thread, for
            // the whole stall. What ends a pause wakes the task itself: the stall's own timer,
            // or a partition change.
            let held_at = self.held.as_ref().map(|h| h.1).filter(|_| !paused);
            let wake = match (self.stall_until, held_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            shared.wakeups.fetch_add(1, Ordering::Relaxed);
            tokio::select! {
                _ = kill.changed() => return Err(Closed::Fin),
                _ = partition.changed() => {}
                _ = tokio::time::sleep_until(wake.unwrap_or(now)), if wake.is_some() => {}
                r = self.client.read_buf(&mut self.cbuf) => {
                    if r? == 0 {
                        return Err(Closed::Fin);
                    }
                }
                r = self.server.read_buf(&mut self.sbuf), if !paused => {
                    if r? == 0 {
                        return Err(Closed::Fin);
                    }
                    self.forward_replies().await?;
                }
            }
        }
    }

    /// Forwards every complete request that may go now, applying each one's fault.
    async fn forward_requests(&mut self, shared: &Shared) -> Result<(), Closed> {
        loop {
            if self.drop_reply_at.is_some() || self.black_hole || self.stall_until.is_some() {
                return Ok(());
            }
            if let Some((frame, at)) = self.held.take() {
                if at > Instant::now() {
                    self.held = Some((frame, at));
                    return Ok(());
                }
                self.send_whole(&frame, shared).await?;
                continue;
            }
            let len = match &mut self.pg {
                Some(p) => p.request_len(&self.cbuf),
                None => resp::frame_len(&self.cbuf),
            };
            let Some(len) = len else { return Ok(()) };
            let frame: Vec<u8> = self.cbuf.drain(..len).collect();
            let name = match &self.pg {
                Some(p) => p.name(&frame),
                None => resp::command_name(&frame),
            };
            if name == pg::STARTUP {
                // A Postgres connection starting: never counted, never faulted.
                self.server.write_all(&frame).await?;
                continue;
            }
            if name == "SYNC" || name == "PSYNC" {
                // A replica syncing from its master (a cluster node reaches its master at the
                // announced, proxied address): the RDB payload that follows is not RESP-framed,
                // and the proxy is for client faults, so the link passes untouched from here.
                self.server.write_all(&frame).await?;
                self.raw = true;
                return Ok(());
            }
            let fault = match self.first_fault.take() {
                Some(f) => {
                    shared.commands.fetch_add(1, Ordering::Relaxed);
                    Some(f)
                }
                None => shared.on_command(&name),
            };
            let fault = fault.or(self.every_delay.map(Fault::Delay));
            match fault {
                None => self.send_whole(&frame, shared).await?,
                Some(Fault::Delay(d)) => self.held = Some((frame, Instant::now() + d)),
                Some(Fault::Stall(d)) => {
                    self.stall_until = Some(Instant::now() + d);
                    self.held = Some((frame, Instant::now()));
                }
                Some(Fault::DropRequest(n)) => {
                    self.server.write_all(&frame[..n.min(frame.len())]).await?;
                    self.server.flush().await?;
                    return Err(Closed::Fin);
                }
                Some(Fault::DropReply) => {
                    self.drop_reply_at = Some(self.forwarded);
                    self.send_whole(&frame, shared).await?;
                }
                Some(Fault::Reset) => return Err(Closed::Reset),
                Some(Fault::BlackHole) => self.black_hole = true,
            }
        }
    }

    /// Copies both ways as they are until either side closes.
    async fn pipe(&mut self) -> Result<(), Closed> {
        self.server.write_all(&std::mem::take(&mut self.cbuf)).await?;
        self.client.write_all(&std::mem::take(&mut self.sbuf)).await?;
        tokio::io::copy_bidirectional(&mut self.client, &mut self.server).await?;
        Err(Closed::Fin)
    }

    async fn send_whole(&mut self, frame: &[u8], shared: &Shared) -> Result<(), Closed> {
        self.server.write_all(frame).await?;
        self.forwarded += 1;
        if resp::is_script(&resp::command_name(frame)) {
            shared.script_forwarded();
        }
        Ok(())
    }

    /// Forwards every complete reply, swallowing the one a `DropReply` chose and closing.
    async fn forward_replies(&mut self) -> Result<(), Closed> {
        loop {
            let next = match &mut self.pg {
                Some(p) => p.reply_len(&self.sbuf),
                None => resp::frame_len(&self.sbuf).map(|len| (len, !resp::is_push(&self.sbuf[..len]))),
            };
            let Some((len, counted)) = next else { break };
            if counted {
                if self.drop_reply_at == Some(self.replies) {
                    // The server has executed it and answered: the client never hears.
                    return Err(Closed::Fin);
                }
                self.replies += 1;
            }
            self.client.write_all(&self.sbuf[..len]).await?;
            self.sbuf.drain(..len);
        }
        Ok(())
    }
}
