//! The RESP3 reader's property tests: random RESP3 frames, as a server that said `HELLO 3`
//! sends them, each with the value the reader must read from it ([`super::resp::value`], RESP3's
//! types as RESP2 spells them), framed by [`frame_len`] whatever byte the reads stop at.

use proptest::prelude::*;

use super::resp::{self, frame_len};
use super::value::Value;

/// A frame and what the reader reads from it.
#[derive(Clone, Debug)]
struct Frame {
    bytes: Vec<u8>,
    value: Value,
}

fn leaf(bytes: impl Into<Vec<u8>>, value: Value) -> Frame {
    Frame { bytes: bytes.into(), value }
}

fn blob(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("{}{}\r\n", kind as char, payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\r\n");
    out
}

fn any_leaf() -> impl Strategy<Value = Frame> {
    let bytes = prop::collection::vec(any::<u8>(), 0..24);
    prop_oneof![
        "[ -~]{0,16}"
            .prop_map(|s| leaf(format!("+{s}\r\n"), if s == "OK" { Value::Okay } else { Value::SimpleString(s) })),
        any::<i64>().prop_map(|i| leaf(format!(":{i}\r\n"), Value::Int(i))),
        bytes.clone().prop_map(|b| leaf(blob(b'$', &b), Value::BulkString(b))),
        Just(leaf("$-1\r\n", Value::Nil)),
        Just(leaf("*-1\r\n", Value::Nil)),
        Just(leaf("_\r\n", Value::Nil)),
        any::<bool>().prop_map(|b| leaf(if b { "#t\r\n" } else { "#f\r\n" }, Value::Int(i64::from(b)))),
        prop_oneof![
            any::<f64>().prop_map(|d| format!("{d}")),
            Just("inf".to_string()),
            Just("-inf".into()),
            Just("nan".into())
        ]
        .prop_map(|d| leaf(format!(",{d}\r\n"), Value::BulkString(d.into_bytes()))),
        "-?[1-9][0-9]{0,40}".prop_map(|n| leaf(format!("({n}\r\n"), Value::BulkString(n.into_bytes()))),
        (prop::sample::select(vec!["txt", "mkd"]), bytes).prop_map(|(format, b)| {
            let mut payload = format!("{format}:").into_bytes();
            payload.extend_from_slice(&b);
            leaf(blob(b'=', &payload), Value::BulkString(b))
        }),
    ]
}

fn any_value() -> impl Strategy<Value = Frame> {
    any_leaf().prop_recursive(4, 32, 5, |inner| {
        let items = prop::collection::vec(inner.clone(), 0..5);
        prop_oneof![
            (prop::sample::select(vec![b'*', b'~']), items.clone()).prop_map(|(kind, items)| {
                let mut bytes = format!("{}{}\r\n", kind as char, items.len()).into_bytes();
                items.iter().for_each(|f| bytes.extend_from_slice(&f.bytes));
                Frame { bytes, value: Value::Array(items.into_iter().map(|f| f.value).collect()) }
            }),
            prop::collection::vec((inner.clone(), inner.clone()), 0..3).prop_map(|pairs| {
                let mut bytes = format!("%{}\r\n", pairs.len()).into_bytes();
                let mut values = Vec::new();
                for (k, v) in pairs {
                    bytes.extend_from_slice(&k.bytes);
                    bytes.extend_from_slice(&v.bytes);
                    values.extend([k.value, v.value]);
                }
                Frame { bytes, value: Value::Array(values) }
            }),
            // An attribute reads as the reply it describes.
            (prop::collection::vec((inner.clone(), inner.clone()), 1..3), inner).prop_map(|(pairs, data)| {
                let mut bytes = format!("|{}\r\n", pairs.len()).into_bytes();
                for (k, v) in pairs {
                    bytes.extend_from_slice(&k.bytes);
                    bytes.extend_from_slice(&v.bytes);
                }
                bytes.extend_from_slice(&data.bytes);
                Frame { bytes, value: data.value }
            }),
        ]
    })
}

/// A push: out-of-band data, which answers no call.
fn any_push() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any_value(), 1..4).prop_map(|items| {
        let mut bytes = format!(">{}\r\n", items.len()).into_bytes();
        items.iter().for_each(|f| bytes.extend_from_slice(&f.bytes));
        bytes
    })
}

/// Every prefix is incomplete, the whole frame has its exact length, and what follows it is left
/// for the next frame.
fn framed_at_every_byte(bytes: &[u8]) -> Result<(), TestCaseError> {
    for cut in 0..bytes.len() {
        prop_assert_eq!(frame_len(&bytes[..cut]), Ok(None), "cut at {} of {:?}", cut, String::from_utf8_lossy(bytes));
    }
    prop_assert_eq!(frame_len(bytes), Ok(Some(bytes.len())));
    let mut two = bytes.to_vec();
    two.extend_from_slice(b":1\r\n");
    prop_assert_eq!(frame_len(&two), Ok(Some(bytes.len())));
    Ok(())
}

proptest! {
    #[test]
    fn a_resp3_reply_is_framed_at_its_last_byte_and_read_back(frame in any_value()) {
        framed_at_every_byte(&frame.bytes)?;
        prop_assert!(!resp::is_push(&frame.bytes));
        prop_assert_eq!(resp::value(&frame.bytes), Some(frame.value.clone()));
        // Cut short, it is no value.
        prop_assert_eq!(resp::value(&frame.bytes[..frame.bytes.len() - 1]), None);
        // redis-rs's parser reads the same bytes: the generator speaks RESP3 as Redis does.
        #[cfg(feature = "redis")]
        prop_assert!(redis::parse_redis_value(&frame.bytes).is_ok(), "{:?}", String::from_utf8_lossy(&frame.bytes));
    }

    #[test]
    fn a_push_is_one_frame_and_never_a_reply(push in any_push(), reply in any_value()) {
        framed_at_every_byte(&push)?;
        prop_assert!(resp::is_push(&push));
        prop_assert_eq!(resp::value(&push), None);
        prop_assert_eq!(resp::error(&push), None);
        // A push ahead of a reply ends where the reply starts.
        let mut both = push.clone();
        both.extend_from_slice(&reply.bytes);
        prop_assert_eq!(frame_len(&both), Ok(Some(push.len())));
        prop_assert_eq!(resp::value(&both[push.len()..]), Some(reply.value));
    }

    #[test]
    fn a_blob_error_reads_as_the_error_line(code in "[A-Z]{1,10}", detail in "[ -~]{0,30}") {
        let text = if detail.is_empty() { code.clone() } else { format!("{code} {detail}") };
        let bytes = blob(b'!', text.as_bytes());
        framed_at_every_byte(&bytes)?;
        let expected = text.split_once(' ').unwrap_or((&text, ""));
        prop_assert_eq!(resp::error(&bytes), Some(expected));
        let line = format!("-{text}\r\n");
        prop_assert_eq!(resp::error(line.as_bytes()), Some(expected));
        prop_assert_eq!(resp::value(&bytes), Some(Value::Error(text.clone())));
        prop_assert_eq!(resp::value(line.as_bytes()), Some(Value::Error(text)));
    }
}

#[test]
fn resp3_frames_as_redis_sends_them() {
    // `HELLO 3`'s reply: a map.
    let hello = b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n";
    assert_eq!(frame_len(hello), Ok(Some(hello.len())));
    assert_eq!(
        resp::value(hello),
        Some(Value::Array(vec![
            Value::BulkString(b"server".to_vec()),
            Value::BulkString(b"redis".to_vec()),
            Value::BulkString(b"proto".to_vec()),
            Value::Int(3),
        ]))
    );
    // A script's `false` and `nil` in RESP3.
    assert_eq!(resp::value(b"*2\r\n#f\r\n_\r\n"), Some(Value::Array(vec![Value::Int(0), Value::Nil])));
    // An invalidation push, then the call's reply on the same read.
    let both = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n:7\r\n";
    let n = frame_len(both).unwrap().unwrap();
    assert!(resp::is_push(&both[..n]));
    assert_eq!(resp::int(&both[n..]), Some(7));
    // Bytes that start no frame are garbage still; so is a streamed string's `?` length.
    assert!(frame_len(b"x\r\n").is_err());
    assert!(frame_len(b"$?\r\n").is_err());
}
