//! The engine's own command and reply types: a script's `ARGV` ([`Args`]) and a parsed
//! reply ([`Value`]). The engine, the scripts' calls and the REST mapping need nothing more,
//! so no build links a Redis client library (redis-rs is the tests' oracle only).

use std::fmt;

/// A command's arguments, each a byte string, in one buffer (integers are written straight
/// into it: no string per argument).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Args {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

/// What [`Args::arg`] takes: the bytes Redis receives for a value (integers in decimal).
pub trait Arg {
    /// Appends the argument's bytes to `out`.
    fn write_to(&self, out: &mut Vec<u8>);
}

impl Args {
    /// No arguments.
    pub fn new() -> Args {
        Args::default()
    }

    /// Room for `args` arguments of `bytes` bytes in all.
    pub fn with_capacity(args: usize, bytes: usize) -> Args {
        Args { bytes: Vec::with_capacity(bytes), ends: Vec::with_capacity(args) }
    }

    /// Appends one argument.
    pub fn arg(&mut self, a: impl Arg) -> &mut Args {
        a.write_to(&mut self.bytes);
        self.ends.push(self.bytes.len());
        self
    }

    /// How many arguments.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Each argument's bytes, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.ends.len()).map(|i| &self.bytes[if i == 0 { 0 } else { self.ends[i - 1] }..self.ends[i]])
    }

    /// The arguments as one RESP array of bulk strings (what a test compares).
    #[cfg(test)]
    pub fn packed(&self) -> Vec<u8> {
        let mut out = Vec::new();
        super::resp::write_command(&mut out, self.iter());
        out
    }
}

impl fmt::Debug for Args {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter().map(String::from_utf8_lossy)).finish()
    }
}

impl Arg for &[u8] {
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

impl Arg for &Vec<u8> {
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

impl Arg for &str {
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}

impl Arg for &String {
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}

impl Arg for String {
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
}

/// Integers in decimal by the RESP writer's own digit loop ([`super::resp::decimal`]): a call
/// packs about six of them, and `write!`'s formatter cost ~150 instructions each (callgrind).
macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            #[allow(unused_comparisons)]
            fn write_to(&self, out: &mut Vec<u8>) {
                if *self < 0 {
                    out.push(b'-');
                }
                let mut digits = [0; 20];
                out.extend_from_slice(super::resp::decimal((*self as i128).unsigned_abs() as u64, &mut digits));
            }
        }
    )*};
}
int_arg!(i64, u64, u32, usize);

/// A reply, parsed (by the engine's RESP reader; RESP3's types as RESP2 spells them).
#[derive(Clone, PartialEq, Eq)]
pub enum Value {
    /// `$-1` or `*-1`.
    Nil,
    /// `:n`.
    Int(i64),
    /// `$n` and its bytes.
    BulkString(Vec<u8>),
    /// `*n` and its items.
    Array(Vec<Value>),
    /// `+OK`.
    Okay,
    /// Any other `+line`.
    SimpleString(String),
    /// `-CODE detail`: the whole line after `-`.
    Error(String),
}

/// As redis-rs prints its own `Value` (the store's error messages quote replies this way).
impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => write!(f, "nil"),
            Value::Int(v) => write!(f, "int({v:?})"),
            Value::BulkString(v) => match std::str::from_utf8(v) {
                Ok(x) => write!(f, "bulk-string('{x:?}')"),
                Err(_) => write!(f, "binary-data({v:?})"),
            },
            Value::Array(v) => write!(f, "array({v:?})"),
            Value::Okay => write!(f, "ok"),
            Value::SimpleString(s) => write!(f, "simple-string({s:?})"),
            Value::Error(e) => write!(f, "Server error: `{e}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_keep_each_argument_apart() {
        let mut a = Args::new();
        a.arg("x").arg(-12i64).arg(7u64).arg(&b"\x00\xff"[..]).arg(String::new());
        let got: Vec<&[u8]> = a.iter().collect();
        assert_eq!(got, [&b"x"[..], b"-12", b"7", b"\x00\xff", b""]);
        assert_eq!(a.len(), 5);
    }

    /// Integers are written as `to_string` writes them, at every edge of each type.
    #[test]
    fn integers_are_their_decimal_text() {
        let mut a = Args::new();
        let mut want = Vec::new();
        for v in [0, -1, 1, 9, -10, 1_800_000_000_000, i64::MIN, i64::MAX] {
            a.arg(v);
            want.push(v.to_string());
        }
        for v in [0, 10, u64::MAX] {
            a.arg(v);
            want.push(v.to_string());
        }
        a.arg(u32::MAX).arg(usize::MAX);
        want.extend([u32::MAX.to_string(), usize::MAX.to_string()]);
        assert_eq!(a.iter().collect::<Vec<_>>(), want.iter().map(String::as_bytes).collect::<Vec<_>>());
    }

    #[cfg(feature = "redis")]
    #[test]
    fn args_are_the_bytes_redis_rs_writes() {
        let mut ours = Args::new();
        let mut theirs = redis::Cmd::new();
        ours.arg(i64::MIN).arg(u64::MAX).arg(3usize).arg("0.5");
        theirs.arg(i64::MIN).arg(u64::MAX).arg(3usize).arg("0.5");
        let theirs: Vec<&[u8]> =
            theirs.args_iter().filter_map(|a| if let redis::Arg::Simple(b) = a { Some(b) } else { None }).collect();
        assert_eq!(ours.iter().collect::<Vec<_>>(), theirs);
    }

    #[cfg(feature = "redis")]
    #[test]
    fn values_print_as_redis_rs_prints_them() {
        let frame = b"*5\r\n:1\r\n$2\r\nab\r\n$-1\r\n+OK\r\n+PONG\r\n";
        let ours = super::super::resp::value(frame).unwrap();
        let theirs = redis::parse_redis_value(frame).unwrap();
        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
        assert_eq!(super::super::tests::from_redis(&theirs), ours);
    }
}
