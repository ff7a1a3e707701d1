//! The JSON text of a REST reply, read by hand: `{"result": R}`, `{"error": E}` or an array of
//! those (`/pipeline`), where `R` is a Redis reply (an integer, a string, `null`, an array).
//!
//! A reader of its own instead of `serde_json`'s: the WebAssembly build has no other use for a
//! JSON text parser, and serde_json's (its deserializer, number parsing and error texts) was
//! 10 KB of code and 3.6 KB of data in the module. Natively the REST client uses this one too,
//! so both read a reply the same way. It accepts exactly the JSON grammar (RFC 8259: any value,
//! nested at most [`MAX_DEPTH`] deep, as serde_json's default allows), and keeps of a number
//! only what a Redis reply can be: an integer in `i64`, or not ([`Json::Number`] with no value:
//! a fraction, an exponent or a larger integer, which no reply is). It differs from serde_json
//! only on a number too large for an `f64` (`1e400`), which serde_json refuses and this reads
//! as a non-integer: either way the reply is unreadable.

/// How deep arrays and objects may nest: 127 levels, as serde_json's default recursion limit
/// (128) admits.
const MAX_DEPTH: usize = 127;

/// A JSON value, as much of it as a reply can use.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// A number: `Some` when it is an integer in `i64`.
    Number(Option<i64>),
    String(String),
    Array(Vec<Json>),
    /// Members in order, each key once (a repeated key keeps its last value, as serde_json's
    /// map does).
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The JSON text `text`, or `None` when it is not one JSON value (surrounding whitespace
    /// allowed).
    pub(crate) fn parse(text: &[u8]) -> Option<Json> {
        let mut r = Reader { text, at: 0 };
        let value = r.value(0)?;
        r.space();
        (r.at == text.len()).then_some(value)
    }

    /// The member `key` of an object (`None` for anything else).
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
}

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// Steps over `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json> {
        self.space();
        match self.peek()? {
            b'n' => self.word(b"null", Json::Null),
            b't' => self.word(b"true", Json::Bool(true)),
            b'f' => self.word(b"false", Json::Bool(false)),
            b'"' => self.string().map(Json::String),
            b'-' | b'0'..=b'9' => self.number(),
            b'[' if depth < MAX_DEPTH => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.close(b']') {
                    loop {
                        items.push(self.value(depth + 1)?);
                        if !self.more(b']')? {
                            break;
                        }
                    }
                }
                Some(Json::Array(items))
            }
            b'{' if depth < MAX_DEPTH => {
                self.at += 1;
                let mut members: Vec<(String, Json)> = Vec::new();
                if !self.close(b'}') {
                    loop {
                        self.space();
                        if self.peek()? != b'"' {
                            return None;
                        }
                        let key = self.string()?;
                        self.space();
                        if !self.eat(b':') {
                            return None;
                        }
                        let value = self.value(depth + 1)?;
                        match members.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, v)) => *v = value,
                            None => members.push((key, value)),
                        }
                        if !self.more(b'}')? {
                            break;
                        }
                    }
                }
                Some(Json::Object(members))
            }
            _ => None,
        }
    }

    /// Whether the container ends at once (`[]`, `{}`).
    fn close(&mut self, end: u8) -> bool {
        self.space();
        self.eat(end)
    }

    /// After an item: `Some(true)` on `,`, `Some(false)` on `end`, `None` on anything else.
    fn more(&mut self, end: u8) -> Option<bool> {
        self.space();
        if self.eat(b',') { Some(true) } else { self.eat(end).then_some(false) }
    }

    fn word(&mut self, word: &[u8], value: Json) -> Option<Json> {
        let end = self.at + word.len();
        (self.text.get(self.at..end) == Some(word)).then(|| {
            self.at = end;
            value
        })
    }

    fn digits(&mut self) -> usize {
        let from = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - from
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Option<Json> {
        let from = self.at;
        self.eat(b'-');
        let lead = self.peek();
        match self.digits() {
            0 => return None,
            n if n > 1 && lead == Some(b'0') => return None,
            _ => {}
        }
        let mut integer = true;
        if self.eat(b'.') {
            integer = false;
            if self.digits() == 0 {
                return None;
            }
        }
        if self.eat(b'e') || self.eat(b'E') {
            integer = false;
            let _ = self.eat(b'+') || self.eat(b'-');
            if self.digits() == 0 {
                return None;
            }
        }
        let text = std::str::from_utf8(&self.text[from..self.at]).ok()?;
        // `-0` is a float to serde_json (`-0.0`), no integer.
        Some(Json::Number(if integer && text != "-0" { text.parse().ok() } else { None }))
    }

    /// A string from its opening quote: escapes decoded, UTF-8 checked.
    fn string(&mut self) -> Option<String> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let from = self.at;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            out.extend_from_slice(&self.text[from..self.at]);
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return String::from_utf8(out).ok();
                }
                b'\\' => {
                    self.at += 1;
                    let escaped = self.peek()?;
                    self.at += 1;
                    let c = match escaped {
                        b'"' | b'\\' | b'/' => char::from(escaped),
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return None,
                    };
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                // A control character.
                _ => return None,
            }
        }
    }

    /// The character of a `\u` escape (its `u` read), a surrogate pair in two escapes.
    fn unicode(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        if !(0xD800..0xDC00).contains(&hi) {
            return char::from_u32(hi);
        }
        if !(self.eat(b'\\') && self.eat(b'u')) {
            return None;
        }
        let lo = self.hex4()?;
        if !(0xDC00..0xE000).contains(&lo) {
            return None;
        }
        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        self.at += 4;
        digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
    }
}
