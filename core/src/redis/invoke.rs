//! The commands that run one script call, and its one fallback. Every path of the store (the
//! blocking, direct, bound and hop paths, on one node or a cluster) sends the same commands:
//!
//! - **Functions** (Redis >= 7, [`super::scripts::LIBRARY`] loaded at connect): `FCALL`. If
//!   the node answers that the function does not exist (it was flushed, or it is a node that
//!   never had the library), `FUNCTION LOAD REPLACE <library>` and `FCALL` again, pipelined in
//!   one round trip. On a cluster both go to the key's node (a pipeline is routed by its first
//!   keyed command), so the node that lost the library is the one that reloads it.
//! - **Scripts**: `EVALSHA`; on `NOSCRIPT` only, `EVAL` (which caches the script again).
//!
//! - **Durable** ([`Durable`], off by default): `WAIT numreplicas timeout` pipelined after the
//!   call (and after its fallback) in the same round trip; fewer acknowledgements than asked
//!   fail the call (`store_unavailable`, the fail policy decides) although the master counted
//!   it, because a failover now could lose that charge.
//!
//! Any other reply is final: a call that may have counted is never sent again.

use std::time::{Duration, Instant};

use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisResult, Value};

use super::call::ScriptCall;
use super::eval_cmd;
use super::scripts::LIBRARY;

pub(crate) use super::engine::{Durable, Invoke};

impl Durable {
    /// `WAIT replicas timeout_ms`.
    pub(crate) fn wait(self) -> Cmd {
        let mut c = redis::cmd("WAIT");
        c.arg(self.replicas).arg(self.timeout_ms);
        c
    }

    /// The call's reply if `acked` (`WAIT`'s reply) covers the replicas asked for; a server
    /// error reply passes as is (nothing was charged).
    pub(crate) fn check(self, reply: Value, acked: Option<Value>) -> RedisResult<Value> {
        if matches!(reply, Value::ServerError(_)) {
            return Ok(reply);
        }
        match acked {
            Some(Value::Int(n)) if n >= i64::from(self.replicas) => Ok(reply),
            Some(Value::Int(n)) => Err(RedisError::from((
                ErrorKind::Client,
                "not durable",
                format!(
                    "the charge reached {n} of {} replicas within {} ms (durable_replicas)",
                    self.replicas, self.timeout_ms
                ),
            ))),
            other => Err(RedisError::from((ErrorKind::Client, "not durable", format!("WAIT answered {other:?}")))),
        }
    }
}

/// `FUNCTION LOAD REPLACE <library>`: idempotent, so every process may send it.
pub(crate) fn load_library() -> Cmd {
    let mut c = redis::cmd("FUNCTION");
    c.arg("LOAD").arg("REPLACE").arg(&LIBRARY.source);
    c
}

/// `FCALL function numkeys keys... args...`, laid out as `EVALSHA` is ([`eval_cmd`]: one
/// buffer sized for the whole command up front; built from an empty `Cmd`, its buffer and its
/// argument list grew by reallocation several times per call, on every request of `serve`).
fn fcall(call: &ScriptCall) -> Cmd {
    eval_cmd("FCALL", &call.script.function, call)
}

/// The first (and usually only) command of `call`.
pub(crate) fn first(invoke: Invoke, call: &ScriptCall) -> Cmd {
    match invoke {
        Invoke::Functions => fcall(call),
        Invoke::Scripts => eval_cmd("EVALSHA", &call.script.sha, call),
    }
}

/// The fallback after [`is_missing`]; the call's reply is the pipeline's last.
pub(crate) fn fallback(invoke: Invoke, call: &ScriptCall) -> Pipeline {
    let mut p = redis::pipe();
    match invoke {
        Invoke::Functions => {
            p.add_command(load_library());
            p.add_command(fcall(call));
        }
        Invoke::Scripts => {
            p.add_command(eval_cmd("EVAL", &call.script.source, call));
        }
    }
    p
}

/// The node lacks the script (`NOSCRIPT`) or the function (`ERR Function not found`).
pub(crate) fn is_missing(reply: &RedisResult<Value>) -> bool {
    let (code, detail) = match reply {
        Ok(Value::ServerError(e)) => (e.code(), e.details().unwrap_or_default()),
        Err(e) => (e.code().unwrap_or_default(), e.detail().unwrap_or_default()),
        Ok(_) => return false,
    };
    code == "NOSCRIPT" || (code == "ERR" && detail.starts_with("Function not found"))
}

fn last(values: RedisResult<Vec<Value>>) -> RedisResult<Value> {
    values.map(|mut v| v.pop().unwrap_or(Value::Nil))
}

/// Runs `call` on an async connection: the first command, and the fallback only if needed;
/// with `durable`, `WAIT` rides in the same round trip as each.
pub(crate) async fn run_async<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    invoke: Invoke,
    durable: Option<Durable>,
    call: &ScriptCall,
) -> RedisResult<Value> {
    let Some(d) = durable else {
        let reply = conn.req_packed_command(&first(invoke, call)).await;
        if !is_missing(&reply) {
            return reply;
        }
        let p = fallback(invoke, call);
        return last(conn.req_packed_commands(&p, 0, p.len()).await);
    };
    let mut p = redis::pipe();
    p.add_command(first(invoke, call)).add_command(d.wait());
    let (reply, acked) = last_two(conn.req_packed_commands(&p, 0, 2).await)?;
    if !is_missing(&Ok(reply.clone())) {
        return d.check(reply, acked);
    }
    let mut p = fallback(invoke, call);
    p.add_command(d.wait());
    let (reply, acked) = last_two(conn.req_packed_commands(&p, 0, p.len()).await)?;
    d.check(reply, acked)
}

/// The call's reply and `WAIT`'s, the last two of a durable pipeline.
pub(crate) fn last_two(values: RedisResult<Vec<Value>>) -> RedisResult<(Value, Option<Value>)> {
    let mut v = values?;
    let acked = v.pop();
    Ok((v.pop().unwrap_or(Value::Nil), acked))
}

/// A blocking connection as the sync paths use it: redis-rs's [`redis::Connection`], or the
/// store's own [`super::wire::Wire`].
pub(crate) trait SyncIo {
    /// Writes a packed command or pipeline.
    fn send_bytes(&mut self, bytes: &[u8]) -> RedisResult<()>;
    /// Reads the next reply (a RESP3 push is returned as one).
    fn recv_value(&mut self) -> RedisResult<Value>;
    /// Bounds each later read.
    fn read_timeout(&mut self, t: Duration) -> RedisResult<()>;
    /// One command and its reply.
    fn request(&mut self, cmd: &Cmd) -> RedisResult<Value>;
}

impl SyncIo for redis::Connection {
    fn send_bytes(&mut self, bytes: &[u8]) -> RedisResult<()> {
        self.send_packed_command(bytes)
    }

    fn recv_value(&mut self) -> RedisResult<Value> {
        self.recv_response()
    }

    fn read_timeout(&mut self, t: Duration) -> RedisResult<()> {
        self.set_read_timeout(Some(t))
    }

    fn request(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        redis::ConnectionLike::req_command(self, cmd)
    }
}

impl SyncIo for super::wire::Wire {
    fn send_bytes(&mut self, bytes: &[u8]) -> RedisResult<()> {
        self.send(bytes)
    }

    fn recv_value(&mut self) -> RedisResult<Value> {
        self.recv()
    }

    fn read_timeout(&mut self, t: Duration) -> RedisResult<()> {
        self.set_read_timeout(t)
    }

    fn request(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        self.send_cmd(cmd)?;
        self.recv()
    }
}

impl SyncIo for super::wire::SyncConn {
    fn send_bytes(&mut self, bytes: &[u8]) -> RedisResult<()> {
        match self {
            Self::Crate(c) => c.send_bytes(bytes),
            Self::Wire(w) => w.send_bytes(bytes),
        }
    }

    fn recv_value(&mut self) -> RedisResult<Value> {
        match self {
            Self::Crate(c) => c.recv_value(),
            Self::Wire(w) => w.recv_value(),
        }
    }

    fn read_timeout(&mut self, t: Duration) -> RedisResult<()> {
        match self {
            Self::Crate(c) => SyncIo::read_timeout(c, t),
            Self::Wire(w) => SyncIo::read_timeout(w, t),
        }
    }

    fn request(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Self::Crate(c) => c.request(cmd),
            Self::Wire(w) => w.request(cmd),
        }
    }
}

/// [`run_async`] on a blocking connection, every reply read by `deadline` (the connection's
/// read timeout is `full` again afterwards, when the call answered).
pub(crate) fn run_sync(
    conn: &mut impl SyncIo,
    invoke: Invoke,
    durable: Option<Durable>,
    call: &ScriptCall,
    deadline: Instant,
    full: Duration,
) -> RedisResult<Value> {
    let Some(d) = durable else {
        let reply = conn.request(&first(invoke, call));
        return run_sync_fallback(conn, invoke, call, reply, deadline, full);
    };
    let mut p = redis::pipe();
    p.add_command(first(invoke, call)).add_command(d.wait());
    let (reply, acked) = last_two(pipeline_within(conn, &p.get_packed_pipeline(), 2, deadline, full))?;
    if !is_missing(&Ok(reply.clone())) {
        return d.check(reply, acked);
    }
    let mut p = fallback(invoke, call);
    p.add_command(d.wait());
    let (reply, acked) = last_two(pipeline_within(conn, &p.get_packed_pipeline(), p.len(), deadline, full))?;
    d.check(reply, acked)
}

/// `reply` if it is the call's, else the fallback's (`EVAL` after `NOSCRIPT`, `FUNCTION LOAD`
/// and `FCALL` after a missing function), its replies read by `deadline`.
pub(crate) fn run_sync_fallback(
    conn: &mut impl SyncIo,
    invoke: Invoke,
    call: &ScriptCall,
    reply: RedisResult<Value>,
    deadline: Instant,
    full: Duration,
) -> RedisResult<Value> {
    if !is_missing(&reply) {
        return reply;
    }
    let p = fallback(invoke, call);
    last(pipeline_within(conn, &p.get_packed_pipeline(), p.len(), deadline, full))
}

/// Sends a pipeline of `count` commands on a blocking connection and reads its replies, each
/// read bounded by the time left until `deadline`; then sets the read timeout back to `full`.
///
/// Why not the crate's `req_packed_commands`: it reads every reply with the socket's read
/// timeout, each read waiting a whole timeout, and keeps reading after the first fails, so on
/// a server gone silent a two-command pipeline (a call and its `WAIT`) took twice the timeout.
/// A failed read ends the call here; the connection is then dropped, never reused.
pub(crate) fn pipeline_within(
    conn: &mut impl SyncIo,
    packed: &[u8],
    count: usize,
    deadline: Instant,
    full: Duration,
) -> RedisResult<Vec<Value>> {
    conn.send_bytes(packed)?;
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no reply within the call's timeout",
            )));
        }
        conn.read_timeout(left)?;
        match conn.recv_value()? {
            // RESP3 pushes are not replies.
            Value::Push { .. } => {}
            v => out.push(v),
        }
    }
    conn.read_timeout(full)?;
    Ok(out)
}
