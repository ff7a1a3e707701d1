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
//! Any other reply is final: a call that may have counted is never sent again.

use redis::{Cmd, Pipeline, RedisResult, Value};

use super::call::{self, ScriptCall};
use super::eval_cmd;
use super::scripts::LIBRARY;

/// How the store runs its scripts, chosen once at connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Invoke {
    /// `FCALL` on the loaded library.
    Functions,
    /// `EVALSHA` / `EVAL`.
    Scripts,
}

/// `FUNCTION LOAD REPLACE <library>`: idempotent, so every process may send it.
pub(crate) fn load_library() -> Cmd {
    let mut c = redis::cmd("FUNCTION");
    c.arg("LOAD").arg("REPLACE").arg(&LIBRARY.source);
    c
}

/// `FCALL function numkeys keys... args...`.
fn fcall(call: &ScriptCall) -> Cmd {
    let mut c = redis::cmd("FCALL");
    c.arg(&call.script.function).arg(call.keys.len()).arg(&call.keys);
    call::append_args(&mut c, &call.args);
    c
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

/// Runs `call` on an async connection: the first command, and the fallback only if needed.
pub(crate) async fn run_async<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    invoke: Invoke,
    call: &ScriptCall,
) -> RedisResult<Value> {
    let reply = conn.req_packed_command(&first(invoke, call)).await;
    if !is_missing(&reply) {
        return reply;
    }
    let p = fallback(invoke, call);
    last(conn.req_packed_commands(&p, 0, p.len()).await)
}

/// [`run_async`] on a blocking connection.
pub(crate) fn run_sync(conn: &mut redis::Connection, invoke: Invoke, call: &ScriptCall) -> RedisResult<Value> {
    use redis::ConnectionLike;
    let reply = conn.req_command(&first(invoke, call));
    if !is_missing(&reply) {
        return reply;
    }
    let p = fallback(invoke, call);
    last(conn.req_packed_commands(&p.get_packed_pipeline(), 0, p.len()))
}
