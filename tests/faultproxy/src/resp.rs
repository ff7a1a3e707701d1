//! Just enough RESP (2 and 3) to find where one frame ends, so the proxy can count requests and
//! replies and fault one exact command. It never interprets values beyond a command's name.

/// The length of the first complete frame in `buf`, or `None` when more bytes are needed.
///
/// An inline command (a line that does not start with a RESP type byte) is one frame ending at
/// its newline. An attribute (`|`) is part of the frame that follows it.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    frame_end(buf, 0)
}

fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?.iter().position(|&b| b == b'\n').map(|i| from + i + 1)
}

fn header_number(buf: &[u8], from: usize) -> Option<(i64, usize)> {
    let end = line_end(buf, from)?;
    let text = std::str::from_utf8(&buf[from + 1..end]).ok()?.trim_end();
    // A malformed length is treated as a one-line frame by the caller's fallback below.
    Some((text.parse().unwrap_or(0), end))
}

fn frame_end(buf: &[u8], at: usize) -> Option<usize> {
    let kind = *buf.get(at)?;
    match kind {
        b'$' | b'!' | b'=' => {
            let (len, body) = header_number(buf, at)?;
            if len < 0 {
                return Some(body);
            }
            let end = body + len as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let (count, mut pos) = header_number(buf, at)?;
            let items = if matches!(kind, b'%' | b'|') { count.max(0) * 2 } else { count.max(0) };
            for _ in 0..items {
                pos = frame_end(buf, pos)?;
            }
            if kind == b'|' { frame_end(buf, pos) } else { Some(pos) }
        }
        _ => line_end(buf, at),
    }
}

/// Whether a complete reply frame is a RESP3 push (out-of-band, answers no request).
pub fn is_push(frame: &[u8]) -> bool {
    frame.first() == Some(&b'>')
}

/// A request frame's command name, upper-cased (`FCALL`, `EVALSHA`, ...); empty when unreadable.
pub fn command_name(frame: &[u8]) -> String {
    let name: &[u8] = if frame.first() == Some(&b'*') {
        // *N\r\n$len\r\nNAME\r\n...
        let Some(first) = line_end(frame, 0) else { return String::new() };
        let Some(body) = line_end(frame, first) else { return String::new() };
        let Some(end) = line_end(frame, body) else { return String::new() };
        &frame[body..end]
    } else {
        frame.split(|b| b.is_ascii_whitespace()).find(|w| !w.is_empty()).unwrap_or(&[])
    };
    String::from_utf8_lossy(name).trim().to_ascii_uppercase()
}

/// The commands that run a script or a function: what "script calls" selects.
pub fn is_script(name: &str) -> bool {
    matches!(name, "FCALL" | "FCALL_RO" | "EVALSHA" | "EVALSHA_RO" | "EVAL" | "EVAL_RO")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_end_where_they_should() {
        let req = b"*3\r\n$5\r\nFCALL\r\n$1\r\nf\r\n$1\r\n0\r\n";
        assert_eq!(frame_len(req), Some(req.len()));
        assert_eq!(frame_len(&req[..req.len() - 1]), None);
        assert_eq!(command_name(req), "FCALL");
        assert_eq!(frame_len(b"+OK\r\n:1\r\n"), Some(5));
        assert_eq!(frame_len(b"$-1\r\n"), Some(5));
        assert_eq!(frame_len(b"*2\r\n:1\r\n*1\r\n$2\r\nab\r\n"), Some(20));
        assert_eq!(frame_len(b"%1\r\n+a\r\n:1\r\n"), Some(12));
        assert_eq!(frame_len(b"|1\r\n+a\r\n:1\r\n+OK\r\n"), Some(17));
        assert_eq!(frame_len(b"PING\r\n"), Some(6));
        assert_eq!(command_name(b"ping\r\n"), "PING");
        assert!(is_push(b">2\r\n+a\r\n+b\r\n"));
    }
}
