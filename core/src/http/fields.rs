//! Structured Field Values (RFC 9651) encoders for the few types the rate-limit fields use.
//!
//! Every output is printable ASCII without CR or LF by construction, so a value built here can
//! never split a header or smuggle a second one, whatever the input.

/// The largest sf-integer (15 decimal digits, RFC 9651 section 3.3.1).
pub const MAX_SF_INTEGER: i64 = 999_999_999_999_999;

/// An sf-integer, clamped to `0..=MAX_SF_INTEGER`: every rate-limit number is a non-negative
/// count or duration, and a larger one would not parse (clients must then ignore the field).
pub fn sf_integer(v: i64) -> String {
    let mut out = String::with_capacity(15);
    push_sf_integer(&mut out, v);
    out
}

/// [`sf_integer`] appended to `out`, in decimal without `core::fmt`: the integers of every
/// rate-limit field go through here on every request, and `write!` spent more on its
/// formatting machinery than on the digits.
pub fn push_sf_integer(out: &mut String, v: i64) {
    // At most 15 digits after the clamp.
    let mut n = v.clamp(0, MAX_SF_INTEGER) as u64;
    let mut digits = [0u8; 15];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // One copy of the digits (a `push` per digit checked the capacity and encoded a char
    // each time: ~20 % of the Node middleware's native call for a 13-digit limit).
    out.push_str(std::str::from_utf8(&digits[i..]).unwrap_or_default());
}

/// An sf-string: `"` and `\` escaped with `\`; bytes outside printable ASCII (and `%` itself)
/// percent-encoded as `%XX`, because an sf-string may hold only 0x20..=0x7E. The mapping is
/// injective, so distinct names stay distinct.
pub fn sf_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_sf_string(&mut out, s);
    out
}

/// [`sf_string`] appended to `out`.
pub fn write_sf_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('"');
    // The usual name ("default", a dimension's) needs no escape: copied whole.
    if s.bytes().all(|b| matches!(b, 0x20..=0x7e) && b != b'"' && b != b'\\' && b != b'%') {
        out.push_str(s);
        out.push('"');
        return;
    }
    for &b in s.as_bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            b'%' => out.push_str("%25"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                out.push('%');
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 15)] as char);
            }
        }
    }
    out.push('"');
}

/// An sf-binary (byte sequence): `:base64:` with padding.
pub fn sf_byte_sequence(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4 + 2);
    out.push(':');
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out.push(':');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_clamp_to_fifteen_digits() {
        assert_eq!(sf_integer(-5), "0");
        assert_eq!(sf_integer(42), "42");
        assert_eq!(sf_integer(i64::MAX), "999999999999999");
    }

    #[test]
    fn pushed_integers_are_the_decimal_of_the_clamped_value() {
        for v in [0, 1, 9, 10, 99, 100, 12_345, MAX_SF_INTEGER - 1, MAX_SF_INTEGER, i64::MIN, -1] {
            let mut out = String::from("x=");
            push_sf_integer(&mut out, v);
            assert_eq!(out, format!("x={}", v.clamp(0, MAX_SF_INTEGER)));
        }
        for shift in 0..63 {
            let v = 1i64 << shift;
            assert_eq!(sf_integer(v), v.clamp(0, MAX_SF_INTEGER).to_string());
            assert_eq!(sf_integer(v - 1), (v - 1).clamp(0, MAX_SF_INTEGER).to_string());
        }
    }

    #[test]
    fn strings_escape_quotes_backslashes_and_non_printables() {
        assert_eq!(sf_string("default"), "\"default\"");
        assert_eq!(sf_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(sf_string("x\r\ny%"), "\"x%0D%0Ay%25\"");
        assert_eq!(sf_string("é"), "\"%C3%A9\"");
    }

    #[test]
    fn byte_sequences_are_padded_base64() {
        assert_eq!(sf_byte_sequence(b""), "::");
        assert_eq!(sf_byte_sequence(b"f"), ":Zg==:");
        assert_eq!(sf_byte_sequence(b"fo"), ":Zm8=:");
        assert_eq!(sf_byte_sequence(b"foo"), ":Zm9v:");
        assert_eq!(sf_byte_sequence(b"foobar"), ":Zm9vYmFy:");
    }
}
