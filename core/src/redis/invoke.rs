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
