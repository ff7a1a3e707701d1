//! JSON text the core writes itself (the REST store's command arrays, the HTTP problem bodies),
//! without serde_json's serializer: one string escaper for both.

/// Appends `s` as a JSON string, escaped as serde_json escapes it: `"` and `\`, the short
/// escapes of backspace, form feed, newline, carriage return and tab, `\u00xx` (lowercase) for
/// the other control characters, everything else as is (runs without escapes copied whole).
pub(crate) fn write_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let mut from = 0;
    for (at, b) in s.bytes().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.push_str(&s[from..at]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                out.push_str("\\u00");
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 15)] as char);
            }
        }
        from = at + 1;
    }
    out.push_str(&s[from..]);
    out.push('"');
}
