//! Client identity: which IP address a request counts against.
//!
//! The socket peer is the only address nobody can forge. `X-Forwarded-For` and `Forwarded` are
//! read only when the peer is a configured trusted proxy, and then from the right: each trusted
//! hop vouches for the one to its left, so the first untrusted hop from the right is the client.
//! Taking the leftmost entry instead would let any client pick its own bucket by sending a
//! made-up header.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::spec::Data;

/// Which forwarding header the trusted proxies write. Only that one is read: a proxy that
/// appends to one header passes the other through from the client untouched, so reading both
/// would let a client forge hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (what most proxies and load balancers write).
    #[default]
    #[serde(rename = "x-forwarded-for")]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for="[2001:db8::1]:443"`.
    #[serde(rename = "forwarded")]
    Forwarded,
}

fn default_ipv6_prefix() -> u8 {
    64
}

/// Identity options as data. JSON form (camelCase):
/// `{"trustedProxies": ["10.0.0.0/8", "::1"], "ipv6Prefix": 64, "forwardedHeader": "x-forwarded-for"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientKeyOptions {
    /// CIDRs (or single addresses) of the proxies whose forwarding header is believed. Empty
    /// (the default): the peer is the client.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// IPv6 clients are grouped by this prefix length (1..=128, default 64: one subscriber's
    /// allocation, which a client can otherwise rotate through freely).
    #[serde(default = "default_ipv6_prefix")]
    pub ipv6_prefix: u8,
    /// The header the trusted proxies write (default `x-forwarded-for`).
    #[serde(default)]
    pub forwarded_header: ForwardedHeader,
}

impl Default for ClientKeyOptions {
    fn default() -> ClientKeyOptions {
        ClientKeyOptions {
            trusted_proxies: Vec::new(),
            ipv6_prefix: default_ipv6_prefix(),
            forwarded_header: ForwardedHeader::XForwardedFor,
        }
    }
}

impl ClientKeyOptions {
    /// Parses the JSON form; errors are `config_invalid`.
    pub fn from_json(text: &str) -> Result<ClientKeyOptions> {
        serde_json::from_str(text).map_err(|e| Error::config("http.clientKeyOptions", &format!("are invalid: {e}")))
    }

    /// The options from JSON data, read by hand as serde's derived deserializer reads them
    /// (`serde_json::from_value`): the same values accepted (a map, or an array of the fields in
    /// order) and, for any other, serde's message for the same first problem (a map's keys in
    /// their sorted order). For the WebAssembly build, where the derived code and serde's value
    /// deserializer were 6 KB of the module (docs/edge.md "Size"); a test holds the two to each
    /// other over generated values.
    pub fn from_value(v: &Data) -> std::result::Result<ClientKeyOptions, String> {
        use crate::spec::value::{fewer, invalid_type, one_of};
        const FIELDS: [&str; 3] = ["trustedProxies", "ipv6Prefix", "forwardedHeader"];
        let mut options = ClientKeyOptions::default();
        match v {
            Data::Object(m) => {
                for (key, item) in m {
                    let at = FIELDS
                        .iter()
                        .position(|f| f == key)
                        .ok_or_else(|| format!("unknown field `{key}`, expected {}", one_of(&FIELDS)))?;
                    options.read_field(at, item)?;
                }
            }
            Data::Array(items) => {
                for (at, item) in items.iter().take(FIELDS.len()).enumerate() {
                    options.read_field(at, item)?;
                }
                fewer(items.len(), FIELDS.len(), "array")?;
            }
            other => return Err(invalid_type(other, "struct ClientKeyOptions")),
        }
        Ok(options)
    }

    /// Field `at` (declaration order) of [`ClientKeyOptions::from_value`].
    fn read_field(&mut self, at: usize, item: &Data) -> std::result::Result<(), String> {
        use crate::spec::value::{invalid_type, unit_enum};
        match (at, item) {
            (0, Data::Array(items)) => {
                self.trusted_proxies = items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| invalid_type(i, "a string")))
                    .collect::<std::result::Result<_, _>>()?;
            }
            (0, other) => return Err(invalid_type(other, "a sequence")),
            (1, Data::Number(n)) => {
                self.ipv6_prefix = match (n.as_u64(), n.as_i64()) {
                    (Some(u), _) => {
                        u8::try_from(u).map_err(|_| format!("invalid value: integer `{u}`, expected u8"))?
                    }
                    (None, Some(i)) => return Err(format!("invalid value: integer `{i}`, expected u8")),
                    _ => return Err(invalid_type(item, "u8")),
                };
            }
            (1, other) => return Err(invalid_type(other, "u8")),
            (_, v) => {
                self.forwarded_header = [ForwardedHeader::XForwardedFor, ForwardedHeader::Forwarded]
                    [unit_enum(v, &["x-forwarded-for", "forwarded"])?];
            }
        }
        Ok(())
    }
}

/// A network: an address and a prefix length, with host bits cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cidr {
    network: IpAddr,
    len: u8,
}

impl Cidr {
    fn parse(text: &str) -> Option<Cidr> {
        let (addr, len) = match text.trim().split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text.trim(), None),
        };
        let ip = normalize(addr.parse::<IpAddr>().ok()?);
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let len = match len {
            // Only plain decimal digits: `u8::from_str` would also take a leading `+`.
            Some(l) if !l.is_empty() && l.len() <= 3 && l.bytes().all(|b| b.is_ascii_digit()) => {
                l.parse::<u8>().ok()?
            }
            Some(_) => return None,
            None => max,
        };
        if len > max {
            return None;
        }
        Some(Cidr { network: mask(ip, len), len })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.network.is_ipv4() && mask(ip, self.len) == self.network
    }
}

/// `ip` with all but the first `len` bits cleared.
fn mask(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) };
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & bits))
        }
        IpAddr::V6(v6) => {
            let bits = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len.min(128))) };
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & bits))
        }
    }
}

/// IPv4-mapped IPv6 (`::ffff:192.0.2.1`, what a dual-stack socket reports) becomes IPv4, so one
/// client has one key whichever way it connected.
fn normalize(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Parses one hop as proxies write it: `192.0.2.1`, `192.0.2.1:8080`, `2001:db8::1`,
/// `[2001:db8::1]` or `[2001:db8::1]:443`. Anything else (`unknown`, `_hidden`, garbage) is `None`.
fn parse_hop(text: &str) -> Option<IpAddr> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || (after.starts_with(':') && after[1..].bytes().all(|b| b.is_ascii_digit()))) {
            return None;
        }
        return inside.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if let Ok(ip) = t.parse::<IpAddr>() {
        return Some(ip);
    }
    // IPv4 with a port: exactly one colon.
    let (host, port) = t.split_once(':')?;
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

/// Splits on `sep` outside double-quoted strings (RFC 7239 quotes values with `:` and `[]`).
fn split_unquoted(text: &str, sep: u8) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, b) in text.bytes().enumerate() {
        if escaped {
            escaped = false;
        } else if quoted && b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            quoted = !quoted;
        } else if b == sep && !quoted {
            parts.push(&text[start..i]);
            start = i + 1;
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The `for=` node of one `Forwarded` element, unquoted; `None` when absent or malformed.
fn forwarded_for(element: &str) -> Option<IpAddr> {
    for pair in split_unquoted(element, b';') {
        let Some((name, value)) = pair.split_once('=') else { continue };
        if name.trim().eq_ignore_ascii_case("for") {
            let value = value.trim();
            let value = match value.strip_prefix('"') {
                Some(v) => v.strip_suffix('"')?,
                None => value,
            };
            return parse_hop(value);
        }
    }
    None
}

/// Validated identity options: decides the key of each request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    trusted: Vec<Cidr>,
    ipv6_prefix: u8,
    header: ForwardedHeader,
}

impl Default for ClientIdentity {
    /// No trusted proxies (the peer is the client), IPv6 grouped by /64.
    fn default() -> ClientIdentity {
        ClientIdentity { trusted: Vec::new(), ipv6_prefix: 64, header: ForwardedHeader::XForwardedFor }
    }
}

impl ClientIdentity {
    /// Validates `options`: every trusted proxy a CIDR or an address, the IPv6 prefix in 1..=128.
    pub fn new(options: &ClientKeyOptions) -> Result<ClientIdentity> {
        if !(1..=128).contains(&options.ipv6_prefix) {
            return Err(Error::config("http.ipv6Prefix", "must be an integer in 1..=128"));
        }
        let trusted = options
            .trusted_proxies
            .iter()
            .enumerate()
            .map(|(i, t)| {
                Cidr::parse(t).ok_or_else(|| {
                    Error::config(
                        &format!("http.trustedProxies[{i}]"),
                        "must be an IP address or CIDR (e.g. 10.0.0.0/8)",
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ClientIdentity { trusted, ipv6_prefix: options.ipv6_prefix, header: options.forwarded_header })
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }

    /// The key of the client behind `peer`, given the request's headers as `(name, value)` pairs
    /// (names case-insensitive; repeated headers are read in order, as one comma-joined list).
    ///
    /// Walking from the peer leftwards through the configured header, the first hop that is not
    /// a trusted proxy is the client. If every hop is trusted, the leftmost is. A hop that does not
    /// parse (`unknown`, an obfuscated node, garbage) ends the walk at the last trusted address:
    /// such requests share that proxy's bucket instead of getting a fresh one each.
    ///
    /// IPv4 keys are the dotted address; IPv6 keys are the client's network, `2001:db8:1:2::/64`.
    pub fn key(&self, peer: IpAddr, headers: &[(&str, &str)]) -> String {
        self.format(self.client(peer, headers))
    }

    /// The client's address behind `peer` ([`ClientIdentity::key`] before formatting).
    fn client(&self, peer: IpAddr, headers: &[(&str, &str)]) -> IpAddr {
        let mut client = normalize(peer);
        if self.is_trusted(client) {
            let name = match self.header {
                ForwardedHeader::XForwardedFor => "x-forwarded-for",
                ForwardedHeader::Forwarded => "forwarded",
            };
            let joined: Vec<&str> =
                headers.iter().filter(|(n, _)| n.trim().eq_ignore_ascii_case(name)).map(|(_, v)| *v).collect();
            let joined = joined.join(",");
            let hops: Vec<Option<IpAddr>> = match self.header {
                ForwardedHeader::XForwardedFor => joined.split(',').map(parse_hop).collect(),
                ForwardedHeader::Forwarded => split_unquoted(&joined, b',').into_iter().map(forwarded_for).collect(),
            };
            // An absent header gives one empty hop; that is no hop at all, not a malformed one.
            let hops = if joined.trim().is_empty() { Vec::new() } else { hops };
            for hop in hops.into_iter().rev() {
                match hop {
                    None => break,
                    Some(ip) => {
                        client = normalize(ip);
                        if !self.is_trusted(client) {
                            break;
                        }
                    }
                }
            }
        }
        client
    }

    /// [`ClientIdentity::key`] for a peer given as text (what most frameworks hand over; a
    /// bracketed or port-suffixed form is accepted). A peer that is not an IP address is
    /// `config_invalid`: the middleware must then be given a key function.
    pub fn key_for_peer(&self, peer: &str, headers: &[(&str, &str)]) -> Result<String> {
        let ip = parse_hop(peer).ok_or_else(|| Error::config("http.peer", "is not an IP address"))?;
        Ok(self.key(ip, headers))
    }

    /// [`ClientIdentity::key_for_peer`] appended to `out`, allocating nothing when `out` has
    /// room: the per-request path of a middleware that reuses one buffer (the C ABI's edge).
    pub fn write_key_for_peer(&self, peer: &str, headers: &[(&str, &str)], out: &mut String) -> Result<()> {
        let ip = parse_hop(peer).ok_or_else(|| Error::config("http.peer", "is not an IP address"))?;
        self.write_key(self.client(ip, headers), out);
        Ok(())
    }

    fn format(&self, ip: IpAddr) -> String {
        let mut key = String::new();
        self.write_key(ip, &mut key);
        key
    }

    fn write_key(&self, ip: IpAddr, out: &mut String) {
        use std::fmt::Write as _;
        // Writing to a String never fails.
        match ip {
            IpAddr::V4(v4) => push_ipv4(out, v4),
            IpAddr::V6(_) => {
                let _ = write!(out, "{}/{}", mask(ip, self.ipv6_prefix), self.ipv6_prefix);
            }
        }
    }
}

/// Appends `ip` in dotted decimal, the bytes `Ipv4Addr`'s `Display` writes, without
/// `core::fmt`: this is the client key of every HTTP request, and fmt's machinery (the
/// `Display` of each octet, its padding support) was about a tenth of the library's time in
/// the Go middleware's per-request call.
fn push_ipv4(out: &mut String, ip: Ipv4Addr) {
    let mut buf = [0u8; 15];
    let mut n = 0;
    for (i, o) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            buf[n] = b'.';
            n += 1;
        }
        if o >= 100 {
            buf[n] = b'0' + o / 100;
            n += 1;
        }
        if o >= 10 {
            buf[n] = b'0' + o / 10 % 10;
            n += 1;
        }
        buf[n] = b'0' + o % 10;
        n += 1;
    }
    out.push_str(std::str::from_utf8(&buf[..n]).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hops_parse_in_every_written_form() {
        assert_eq!(parse_hop(" 192.0.2.1 "), Some("192.0.2.1".parse().unwrap()));
        assert_eq!(parse_hop("192.0.2.1:8080"), Some("192.0.2.1".parse().unwrap()));
        assert_eq!(parse_hop("[2001:db8::1]:443"), Some("2001:db8::1".parse().unwrap()));
        assert_eq!(parse_hop("[2001:db8::1]"), Some("2001:db8::1".parse().unwrap()));
        for bad in ["", "unknown", "_hidden", "1.2.3.4:", "1.2.3.4:x", "[::1", "[::1]x", "300.1.1.1", "a:b:c"] {
            assert_eq!(parse_hop(bad), None, "{bad}");
        }
    }

    #[test]
    fn ipv4_keys_are_display_bytes() {
        // Every octet value in every position, and the widths next to each other.
        for o in 0..=255u8 {
            for ip in [[o, 0, 0, 0], [9, o, 10, 255], [100, 99, o, 1], [0, 0, 0, o], [o, o, o, o]] {
                let ip = Ipv4Addr::from(ip);
                let mut out = String::from("x");
                push_ipv4(&mut out, ip);
                assert_eq!(out, format!("x{ip}"));
            }
        }
    }

    #[test]
    fn cidrs_reject_junk_and_clear_host_bits() {
        assert_eq!(Cidr::parse("10.1.2.3/8").unwrap().network, "10.0.0.0".parse::<IpAddr>().unwrap());
        for bad in ["10.0.0.0/33", "10.0.0.0/", "10.0.0.0/+8", "::/129", "nope", "10.0.0.0/8/8"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }

    /// `ClientKeyOptions::from_value` reads as serde does: every combination of good and bad
    /// values of the three fields (and an unknown one), as a map and in the array form, and
    /// values that are no struct at all, give the same options or the same message.
    #[test]
    fn from_value_reads_as_serde_does() {
        use serde_json::{Value, json};
        let values = [
            json!(null),
            json!(true),
            json!(0),
            json!(1),
            json!(64),
            json!(128),
            json!(255),
            json!(256),
            json!(-1),
            json!(1.5),
            json!(1e300),
            json!("x-forwarded-for"),
            json!("forwarded"),
            json!("Forwarded"),
            json!("10.0.0.0/8"),
            json!([]),
            json!(["10.0.0.0/8", "::1"]),
            json!(["10.0.0.0/8", 5]),
            json!([null]),
            json!({}),
            json!({ "forwarded": null }),
            json!({ "x-forwarded-for": null }),
            json!({ "forwarded": 1 }),
            json!({ "nope": null }),
            json!({ "forwarded": null, "x-forwarded-for": null }),
        ];
        let same = |v: Value| {
            let want = serde_json::from_value::<ClientKeyOptions>(v.clone()).map_err(|e| e.to_string());
            assert_eq!(ClientKeyOptions::from_value(&Data::from(&v)), want, "{v}");
        };
        let map = |entries: &[(&str, &Value)]| {
            Value::Object(entries.iter().map(|(k, v)| ((*k).to_owned(), (*v).clone())).collect())
        };
        let names = ["trustedProxies", "ipv6Prefix", "forwardedHeader", "via"];
        for a in &values {
            for b in &values {
                same(json!([a, b]));
                for (i, first) in names.iter().enumerate() {
                    for second in &names[i + 1..] {
                        same(map(&[(*first, a), (*second, b)]));
                    }
                }
            }
            for c in &values {
                same(json!([a, values[6], c]));
                same(map(&[("trustedProxies", a), ("ipv6Prefix", &values[6]), ("forwardedHeader", c)]));
            }
            same(a.clone());
            same(map(&[("ipv6Prefix", a)]));
            same(json!([a, 64, "forwarded", a]));
        }
        same(json!([]));
    }
}
