//! [`Json::parse`] against serde_json's reader: the same texts accepted and rejected, the same
//! values read.

use proptest::prelude::*;
use serde_json::Value as Tree;

use super::json::Json;

/// serde_json's value as [`Json`] (a number is its `i64`, if it has one).
fn from_tree(t: &Tree) -> Json {
    match t {
        Tree::Null => Json::Null,
        Tree::Bool(b) => Json::Bool(*b),
        Tree::Number(n) => Json::Number(n.as_i64()),
        Tree::String(s) => Json::String(s.clone()),
        Tree::Array(items) => Json::Array(items.iter().map(from_tree).collect()),
        Tree::Object(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), from_tree(v))).collect()),
    }
}

/// Whether both readers agree on `text`: both reject it, or both read the same value. Object
/// members compare as sets (serde_json's map is sorted, [`Json`] keeps the text's order).
fn agree(text: &[u8]) -> Result<(), String> {
    let ours = Json::parse(text).map(sorted);
    let theirs = match serde_json::from_slice::<Tree>(text) {
        Ok(t) => Some(sorted(from_tree(&t))),
        // The one difference (json.rs): a number past `f64`'s range is a non-integer here.
        Err(e) if e.to_string().starts_with("number out of range") => return Ok(()),
        Err(_) => None,
    };
    if ours == theirs {
        Ok(())
    } else {
        Err(format!("{:?}: ours {ours:?}, serde_json {theirs:?}", String::from_utf8_lossy(text)))
    }
}

fn sorted(j: Json) -> Json {
    match j {
        Json::Array(items) => Json::Array(items.into_iter().map(sorted).collect()),
        Json::Object(mut m) => {
            m.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(m.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        other => other,
    }
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        Just(Tree::Null),
        any::<bool>().prop_map(Tree::Bool),
        any::<i64>().prop_map(Tree::from),
        any::<u64>().prop_map(Tree::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Tree::from),
        "\\PC*|[\"\\\\/\\x00-\\x1f\u{7f}\u{fffd}\u{10000}-\u{10ffff}]{0,6}".prop_map(Tree::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Tree::Array),
            proptest::collection::btree_map("[a-z\"\\\\]{0,3}", inner, 0..5)
                .prop_map(|m| Tree::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every JSON text serde_json writes, compact or pretty, reads as the same value.
    #[test]
    fn reads_what_serde_json_writes(t in tree()) {
        let want = Some(sorted(from_tree(&t)));
        prop_assert_eq!(Json::parse(serde_json::to_string(&t).unwrap().as_bytes()).map(sorted), want.clone());
        prop_assert_eq!(Json::parse(serde_json::to_string_pretty(&t).unwrap().as_bytes()).map(sorted), want);
    }

    /// A JSON text with one byte changed, cut short or grown is accepted and read as serde_json
    /// does, or rejected as serde_json rejects it.
    #[test]
    fn agrees_with_serde_json_on_damaged_texts(t in tree(), at in any::<proptest::sample::Index>(), byte in prop_oneof![any::<u8>(), proptest::sample::select(b"\"\\{}[],:-+.eE0u\t ".to_vec())], how in 0..3u8) {
        let mut text = serde_json::to_vec(&t).unwrap();
        let i = at.index(text.len());
        match how {
            0 => text[i] = byte,
            1 => text.truncate(i),
            _ => text.insert(i, byte),
        }
        prop_assert!(agree(&text).is_ok(), "{}", agree(&text).unwrap_err());
    }
}

/// Texts at the edges of the grammar, each judged as serde_json judges it.
#[test]
fn agrees_with_serde_json_at_the_edges() {
    let mut texts: Vec<Vec<u8>> = [
        "",
        " ",
        "null",
        " null ",
        "nul",
        "nulll",
        "true",
        "false",
        "0",
        "-0",
        "-",
        "01",
        "-01",
        "1.",
        "1.0",
        ".5",
        "1e",
        "1e+",
        "1E-2",
        "1e400",
        "-1e400",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551616",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\uD83D\\uDE00\"",
        "\"\\u00e9\"",
        "\"\\x\"",
        "\"\t\"",
        "\"\u{7f}\"",
        "[1,]",
        "[,1]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:1}",
        "{\"a\":1,\"a\":2}",
        "[]",
        "{}",
        "[ ]",
        "{ }",
        "[1] [2]",
        "\u{feff}1",
        "\u{a0}1",
        "{\"result\":[1,10,9,5100,0,100]}",
        "[{\"error\":\"NOSCRIPT\"},{\"result\":null}]",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    texts.push(b"\"\xff\"".to_vec());
    texts.push(b"\"\xc3\xa9\"".to_vec());
    for depth in [126, 127, 128, 129] {
        texts.push(format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes());
        texts.push(format!("{}1{}", "[".repeat(depth), "]".repeat(depth)).into_bytes());
    }
    for text in texts {
        agree(&text).unwrap();
    }
}
