//! RESP2 and RESP3, as much of them as the engine speaks: where a reply frame ends (the one
//! scanner every Rust driver uses), whether a frame is a RESP3 push (which answers no call), a
//! script's reply read without building a value (one integer or an array of integers), any
//! other reply as a value, an error split into its code and detail, and commands written from
//! their arguments.
//!
//! RESP3 (a connection that said `HELLO 3`) adds the map `%`, set `~`, null `_`, boolean `#`,
//! double `,`, big number `(`, verbatim string `=`, blob error `!`, attribute `|` (data about the
//! reply that follows it) and push `>` (out-of-band data). The reader reads them as RESP2 spells
//! them ([`value`]), so the engine's rules see one set of replies whatever the protocol.
//!
//! Why not redis-rs's parser: it zero-fills 8 KB per call and builds a `Value` tree for a few
//! integers, and its grammar would weigh on the WebAssembly module (docs/performance.md, "Why
//! the Redis drivers are our own"). [`value`] reads what it reads (property test
//! `the_value_reader_agrees_with_the_parser`).
//!
//! A transport that does not speak RESP (a REST front end answering JSON) writes its reply as
//! RESP with [`write_int`], [`write_array`] and [`write_error`] and feeds that.

use std::fmt;

use super::value::Value;

/// Bytes that start no RESP frame: the stream is out of step and the connection must go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Garbage(pub String);

impl fmt::Display for Garbage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Garbage {}

#[cfg(feature = "redis")]
impl From<Garbage> for std::io::Error {
    fn from(g: Garbage) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, g.0)
    }
}

/// The whole frames at the start of `bytes`, in order (none past a partial frame or garbage).
pub fn frames(mut bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let n = frame_len(bytes).ok()??;
        let (frame, rest) = bytes.split_at(n);
        bytes = rest;
        Some(frame)
    })
}

/// The length of the RESP2 or RESP3 frame at the start of `b`: `Ok(None)` when more bytes are
/// needed, an error for a byte that starts no frame (the connection is then dropped). An
/// attribute counts with the reply it describes (both are one frame); a push is a frame of its
/// own (`is_push`).
pub fn frame_len(b: &[u8]) -> Result<Option<usize>, Garbage> {
    let mut at = 0;
    // Frames still owed: an aggregate adds its elements.
    let mut owed: u64 = 1;
    while owed > 0 {
        let Some(&kind) = b.get(at) else { return Ok(None) };
        let Some(nl) = b[at..].windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
        let line = &b[at + 1..at + nl];
        at += nl + 2;
        owed -= 1;
        match kind {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {}
            b'$' | b'=' | b'!' => {
                let n = length(line)?;
                if n >= 0 {
                    // The payload and its CRLF.
                    at += n as usize + 2;
                    if at > b.len() {
                        return Ok(None);
                    }
                }
            }
            b'*' | b'~' | b'>' => owed += length(line)?.max(0) as u64,
            b'%' => owed += 2 * length(line)?.max(0) as u64,
            // Its pairs, then the reply it describes.
            b'|' => owed += 2 * length(line)?.max(0) as u64 + 1,
            other => return Err(Garbage(format!("not a RESP reply: a frame starting with byte {other:#04x}"))),
        }
    }
    Ok(Some(at))
}

/// Whether `frame` is a RESP3 push (`>`): data the server sends on its own (a message of a
/// subscription, an invalidation), never the reply to a call. A driver drops it on a connection
/// that subscribes to nothing.
pub fn is_push(frame: &[u8]) -> bool {
    frame.first() == Some(&b'>')
}

/// A `$`/`*` length line: `-1` or a count below 2^40.
fn length(line: &[u8]) -> Result<i64, Garbage> {
    if line == b"-1" {
        return Ok(-1);
    }
    if line.is_empty() || line.len() > 12 || !line.iter().all(u8::is_ascii_digit) {
        return Err(Garbage("bad RESP length".into()));
    }
    Ok(line.iter().fold(0i64, |v, c| v * 10 + i64::from(c - b'0')))
}

/// `then` of the integers of `frame`, the form of every script reply ours send: `(false, [n])`
/// when it is exactly one integer reply `:[-]digits\r\n`, `(true, items)` when it is exactly
/// `*N\r\n` and `N` integer replies (on the stack up to eight: a decision allocates nothing);
/// `None` for anything else (a RESP3 type or attribute included: Redis writes a script's
/// integers and tables as these). redis-rs's parser reads the same integers (test:
/// `the_integer_reader_agrees_with_the_parser`).
pub fn ints<T>(frame: &[u8], then: impl FnOnce(bool, &[i64]) -> Option<T>) -> Option<T> {
    if let Some(rest) = frame.strip_prefix(b":") {
        let (v, rest) = line_int(rest)?;
        return if rest.is_empty() { then(false, &[v]) } else { None };
    }
    let (n, mut rest) = line_int(frame.strip_prefix(b"*")?)?;
    // Each item takes at least four bytes: a length cannot make a large allocation.
    let n = usize::try_from(n).ok().filter(|n| *n <= rest.len() / 4)?;
    let (mut few, mut many) = ([0i64; 8], Vec::new());
    let items = if n <= few.len() {
        &mut few[..n]
    } else {
        many.resize(n, 0);
        &mut many[..]
    };
    for o in items.iter_mut() {
        let (v, r) = line_int(rest.strip_prefix(b":")?)?;
        *o = v;
        rest = r;
    }
    if rest.is_empty() { then(true, items) } else { None }
}

/// The integer of `frame` when it is exactly `:[-]digits\r\n` (a fixed window's count reply,
/// `WAIT`'s, `DEL`'s).
pub fn int(frame: &[u8]) -> Option<i64> {
    frame.strip_prefix(b":").and_then(line_int).filter(|(_, rest)| rest.is_empty()).map(|(v, _)| v)
}

/// The reply `frame` as a [`Value`], as redis-rs's parser reads it (`+OK` is `Okay`, another
/// status a `SimpleString`, `$-1` and `*-1` `Nil`), for the replies that are no plain decision
/// (a multi check's, a reservation's, a lease grant's). RESP3's types read as RESP2 spells
/// them: null as `Nil`, a map as the array of its pairs, a set as an array, a boolean as 0 or
/// 1, a double, a big number and a verbatim string (without its format) as the bulk string of
/// their text, and an attribute as the reply it describes. An error, alone or inside an array
/// (a transaction's), is a [`Value::Error`] of its line (a blob error's text). `None` for
/// anything else: bytes that are no complete frame, trailing bytes, or a push.
pub fn value(frame: &[u8]) -> Option<Value> {
    let (v, rest) = value_at(frame, 0)?;
    rest.is_empty().then_some(v)
}

/// Nesting deeper than any script reply is declined rather than recursed into.
const MAX_DEPTH: usize = 8;

fn value_at(b: &[u8], depth: usize) -> Option<(Value, &[u8])> {
    let (&kind, b) = b.split_first()?;
    let nl = b.windows(2).position(|w| w == b"\r\n")?;
    let (line, rest) = (&b[..nl], &b[nl + 2..]);
    let text = || Some(Value::BulkString(line.to_vec()));
    match kind {
        b'+' => {
            let line = std::str::from_utf8(line).ok()?;
            Some((if line == "OK" { Value::Okay } else { Value::SimpleString(line.to_string()) }, rest))
        }
        b':' => Some((Value::Int(std::str::from_utf8(line).ok()?.trim().parse().ok()?), rest)),
        b'_' if line.is_empty() => Some((Value::Nil, rest)),
        b'#' => Some((
            Value::Int(match line {
                b"t" => 1,
                b"f" => 0,
                _ => return None,
            }),
            rest,
        )),
        b',' | b'(' => Some((text()?, rest)),
        b'-' => Some((Value::Error(std::str::from_utf8(line).ok()?.to_string()), rest)),
        b'$' | b'=' | b'!' => match length(line).ok()? {
            -1 if kind == b'$' => Some((Value::Nil, rest)),
            n if kind == b'!' => {
                let n = usize::try_from(n).ok()?;
                let text = std::str::from_utf8(rest.get(..n)?).ok()?.to_string();
                Some((Value::Error(text), rest.get(n..)?.strip_prefix(b"\r\n")?))
            }
            n => {
                let n = usize::try_from(n).ok()?;
                let payload = rest.get(..n)?;
                let rest = rest.get(n..)?.strip_prefix(b"\r\n")?;
                // A verbatim string starts with its three-letter format and a colon.
                let payload = if kind == b'=' { payload.get(4..).filter(|_| payload[3] == b':')? } else { payload };
                Some((Value::BulkString(payload.to_vec()), rest))
            }
        },
        b'*' | b'~' | b'%' if depth < MAX_DEPTH => match length(line).ok()? {
            -1 if kind == b'*' => Some((Value::Nil, rest)),
            n if n >= 0 => {
                let (items, rest) = items_at(rest, if kind == b'%' { 2 * n } else { n }, depth)?;
                Some((Value::Array(items), rest))
            }
            _ => None,
        },
        b'|' if depth < MAX_DEPTH => {
            let (_, rest) = items_at(rest, 2 * length(line).ok().filter(|n| *n >= 0)?, depth)?;
            value_at(rest, depth + 1)
        }
        _ => None,
    }
}

/// The `n` values at the start of `b`, one level below `depth`, and what follows them.
fn items_at(mut b: &[u8], n: i64, depth: usize) -> Option<(Vec<Value>, &[u8])> {
    let mut items = Vec::with_capacity((n as usize).min(64));
    for _ in 0..n {
        let (v, rest) = value_at(b, depth + 1)?;
        items.push(v);
        b = rest;
    }
    Some((items, b))
}

/// `[-]digits\r\n` at the start of `b`, any `i64`: the number and what follows.
fn line_int(b: &[u8]) -> Option<(i64, &[u8])> {
    let (neg, b) = match b.strip_prefix(b"-") {
        Some(r) => (true, r),
        None => (false, b),
    };
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let rest = b[digits..].strip_prefix(b"\r\n")?;
    if digits <= 18 {
        // Cannot overflow: the plain sum, cheaper per digit than the checked one below, for
        // every integer our scripts send.
        let v = b[..digits].iter().fold(0i64, |v, c| v * 10 + i64::from(c - b'0'));
        return Some((if neg { -v } else { v }, rest));
    }
    // Accumulated negative, so that `i64::MIN` fits.
    let v = b[..digits].iter().try_fold(0i64, |v, c| v.checked_mul(10)?.checked_sub(i64::from(c - b'0')))?;
    Some((if neg { v } else { v.checked_neg()? }, rest))
}

/// The code and the detail of an error frame, `-CODE detail\r\n` or RESP3's blob error
/// `!len\r\nCODE detail\r\n` (the detail may be empty); `None` for any other frame, an error
/// not ended where the frame ends included.
pub fn error(frame: &[u8]) -> Option<(&str, &str)> {
    let line = match frame.split_first()? {
        (b'-', rest) => rest.strip_suffix(b"\r\n")?,
        (b'!', rest) => {
            let nl = rest.windows(2).position(|w| w == b"\r\n")?;
            let n = usize::try_from(length(&rest[..nl]).ok()?).ok()?;
            let body = rest[nl + 2..].strip_suffix(b"\r\n")?;
            if body.len() != n {
                return None;
            }
            body
        }
        _ => return None,
    };
    if line.contains(&b'\r') || line.contains(&b'\n') {
        return None;
    }
    let line = std::str::from_utf8(line).ok()?;
    Some(line.split_once(' ').unwrap_or((line, "")))
}

/// One command, RESP-encoded on its own (a login, a preload, a reset's `DEL`).
pub fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    write_command(&mut out, args.iter().copied());
    out
}

/// Appends one command, `*n` then each argument as a bulk string.
pub fn write_command<'a>(out: &mut Vec<u8>, args: impl ExactSizeIterator<Item = &'a [u8]>) {
    header(out, b'*', args.len());
    for a in args {
        bulk(out, a);
    }
}

/// Appends `a` as a bulk string.
pub(crate) fn bulk(out: &mut Vec<u8>, a: &[u8]) {
    header(out, b'$', a.len());
    out.extend_from_slice(a);
    out.extend_from_slice(b"\r\n");
}

/// Appends `kind`, `n` in decimal and CRLF.
pub(crate) fn header(out: &mut Vec<u8>, kind: u8, n: usize) {
    let mut digits = [0; 20];
    out.push(kind);
    out.extend_from_slice(decimal(n as u64, &mut digits));
    out.extend_from_slice(b"\r\n");
}

/// `n` in decimal, written into `buf`.
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Appends an integer reply, `:n\r\n`.
pub fn write_int(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0; 20];
    out.push(b':');
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(decimal(n.unsigned_abs(), &mut digits));
    out.extend_from_slice(b"\r\n");
}

/// Appends an array header, `*n\r\n`; its `n` elements follow.
pub fn write_array(out: &mut Vec<u8>, n: usize) {
    header(out, b'*', n);
}

/// Appends an error reply, `-message\r\n` (line breaks in `message` become spaces).
pub fn write_error(out: &mut Vec<u8>, message: &str) {
    out.push(b'-');
    out.extend(message.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}
