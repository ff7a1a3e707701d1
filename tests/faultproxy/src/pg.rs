//! Just enough of Postgres's wire protocol (v3) to cut a client's bytes into requests and the
//! server's into replies, as `resp` does for Redis, so a rule can fault one exact statement.
//!
//! Until the server's first `ReadyForQuery` the connection is starting (an `SSLRequest` and its
//! one-byte answer, the startup message, authentication): each message is forwarded as it comes,
//! never counted and never faulted. After it, a request is every client message up to and
//! including a `Sync`, a simple `Query` or a `Terminate`, named by its first message (`PARSE`
//! for a prepare, `BIND` for a prepared statement's execution, `QUERY`); a reply is every server
//! message up to and including the `ReadyForQuery` that ends it.

/// One connection's place in the protocol.
#[derive(Debug, Default)]
pub struct Pg {
    /// The client's startup message was seen: its later messages carry a type byte.
    typed: bool,
    /// An `SSLRequest` waits for the server's one-byte answer.
    ssl_asked: bool,
    /// The server's first `ReadyForQuery` was seen: requests and replies are counted.
    ready: bool,
}

/// The name of a request or reply that belongs to the start of the connection.
pub const STARTUP: &str = "STARTUP";

const SSL_REQUEST: u32 = 80_877_103;

fn be32(buf: &[u8], at: usize) -> Option<usize> {
    let b = buf.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// The length of one typed message at `at` (type byte, then a length that counts itself).
fn typed_len(buf: &[u8], at: usize) -> Option<usize> {
    let len = be32(buf, at + 1)?;
    (buf.len() >= at + 1 + len).then_some(1 + len)
}

impl Pg {
    /// The length of the client's first complete request in `buf`.
    pub fn request_len(&mut self, buf: &[u8]) -> Option<usize> {
        if !self.typed {
            let len = be32(buf, 0)?;
            if buf.len() < len {
                return None;
            }
            if be32(buf, 4) == Some(SSL_REQUEST as usize) {
                self.ssl_asked = true;
            } else {
                self.typed = true;
            }
            return Some(len);
        }
        if !self.ready {
            return typed_len(buf, 0);
        }
        let mut at = 0;
        loop {
            let len = typed_len(buf, at)?;
            let kind = buf[at];
            at += len;
            if matches!(kind, b'S' | b'Q' | b'X') {
                return Some(at);
            }
        }
    }

    /// The name of a request [`Pg::request_len`] cut.
    pub fn name(&self, frame: &[u8]) -> String {
        if !self.ready {
            return STARTUP.to_string();
        }
        match frame.first() {
            Some(b'P') => "PARSE".to_string(),
            Some(b'B') => "BIND".to_string(),
            Some(b'Q') => "QUERY".to_string(),
            Some(b'X') => "TERMINATE".to_string(),
            Some(&b) => format!("PG_{}", b as char),
            None => String::new(),
        }
    }

    /// The length of the server's first complete reply in `buf`, and whether it is a counted
    /// reply (false while the connection is starting).
    pub fn reply_len(&mut self, buf: &[u8]) -> Option<(usize, bool)> {
        if self.ssl_asked {
            // `N` (no TLS: the protocol goes on in the clear) or `S` (TLS, which this proxy
            // cannot frame: not for faulted tests).
            if buf.is_empty() {
                return None;
            }
            self.ssl_asked = false;
            return Some((1, false));
        }
        if !self.ready {
            let len = typed_len(buf, 0)?;
            if buf[0] == b'Z' {
                self.ready = true;
            }
            return Some((len, false));
        }
        let mut at = 0;
        loop {
            let len = typed_len(buf, at)?;
            let kind = buf[at];
            at += len;
            if kind == b'Z' {
                return Some((at, true));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn startup_then_statements_are_cut_at_sync_and_ready_for_query() {
        let mut pg = Pg::default();
        let mut ssl = 8u32.to_be_bytes().to_vec();
        ssl.extend_from_slice(&SSL_REQUEST.to_be_bytes());
        assert_eq!(pg.request_len(&ssl), Some(8));
        assert_eq!(pg.reply_len(b"N"), Some((1, false)));
        let mut startup = 12u32.to_be_bytes().to_vec();
        startup.extend_from_slice(&196_608u32.to_be_bytes());
        startup.extend_from_slice(b"u\0\0\0");
        assert_eq!(pg.request_len(&startup[..10]), None);
        assert_eq!(pg.request_len(&startup), Some(12));
        assert_eq!(pg.name(&startup), STARTUP);
        let auth_ok = msg(b'R', &[0, 0, 0, 0]);
        assert_eq!(pg.reply_len(&auth_ok), Some((9, false)));
        let ready = msg(b'Z', b"I");
        assert_eq!(pg.reply_len(&ready), Some((6, false)));
        let request = [msg(b'B', b"xx"), msg(b'E', b"y"), msg(b'S', b"")].concat();
        assert_eq!(pg.request_len(&request[..request.len() - 1]), None);
        assert_eq!(pg.request_len(&request), Some(request.len()));
        assert_eq!(pg.name(&request), "BIND");
        let reply = [msg(b'2', b""), msg(b'D', b"row"), msg(b'C', b"INSERT 0 1"), msg(b'Z', b"I")].concat();
        assert_eq!(pg.reply_len(&reply[..reply.len() - 2]), None);
        assert_eq!(pg.reply_len(&reply), Some((reply.len(), true)));
    }
}
