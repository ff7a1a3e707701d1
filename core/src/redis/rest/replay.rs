//! Deterministic replay over REST (expiry on the caller's clock, for conformance runs): the
//! RESP store's own replay (`crate::redis::replay`) with its pipelines sent as one
//! `/pipeline` through [`Client`], so both paths run the same commands and book.
//!
//! The pipeline carries `MULTI` ... `EXEC` and `DUMP`/`RESTORE` payloads, which are binary:
//! it asks the test front end (`tests/restfront/`) for its hex encoding (`Throttlekit-Encoding:
//! hex`: every argument and every string in the reply is hex). Test-only, as the mode is.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, Value};

use super::client::Client;
use super::{PATH_PIPELINE, Request, write_resp_as};
use crate::error::{Error, Result};
use crate::redis::call::{Outcome, ScriptCall};
use crate::redis::replay::Book;

/// Runs `call` at `now` as the RESP store's deterministic replay does.
pub(super) fn run(client: &Client, book: &mut Book, call: &ScriptCall, now: i64) -> Result<Outcome> {
    let mut conn = Conn { client };
    let mut fut = std::pin::pin!(crate::redis::replay::run(book, &mut conn, call, now));
    // Every request blocks inside the connection, so the future never waits on a wake-up.
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(r) => r,
        Poll::Pending => Err(Error::store("the REST replay was left pending")),
    }
}

struct Conn<'c> {
    client: &'c Client,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Conn<'_> {
    fn send(&self, commands: &[&Cmd]) -> redis::RedisResult<Vec<Value>> {
        let fail = |e: String| redis::RedisError::from((redis::ErrorKind::Io, "REST replay", e));
        let body: Vec<serde_json::Value> = commands
            .iter()
            .map(|c| {
                c.args_iter()
                    .filter_map(|a| match a {
                        Arg::Simple(b) => Some(serde_json::Value::String(hex(b))),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let request = Request { path: PATH_PIPELINE, body: serde_json::Value::Array(body).to_string() };
        let reply = self.client.post(&request, &[("Throttlekit-Encoding", "hex")]).map_err(|e| fail(e.to_string()))?;
        let items: Vec<serde_json::Value> = serde_json::from_slice(&reply.body)
            .ok()
            .filter(|_| reply.status == 200)
            .ok_or_else(|| fail(format!("HTTP {}: {}", reply.status, String::from_utf8_lossy(&reply.body))))?;
        items
            .iter()
            .map(|item| {
                let mut frame = Vec::new();
                let one = match (item.get("result"), item.get("error")) {
                    (Some(r), None) => r.clone(),
                    (None, Some(e)) => serde_json::json!({ "error": e }),
                    _ => serde_json::Value::Bool(false),
                };
                write_resp_as(&mut frame, &one, true).ok_or_else(|| fail(format!("not a reply: {item}")))?;
                redis::parse_redis_value(&frame)
            })
            .collect()
    }
}

impl ConnectionLike for Conn<'_> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let r = self.send(&[cmd]).map(|mut v| v.pop().unwrap_or(Value::Nil));
        Box::pin(std::future::ready(r))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let commands: Vec<&Cmd> = pipeline.cmd_iter().collect();
        let r = self.send(&commands).map(|v| v.into_iter().skip(offset).take(count).collect());
        Box::pin(std::future::ready(r))
    }

    fn get_db(&self) -> i64 {
        0
    }
}
