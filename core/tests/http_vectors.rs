//! The HTTP vectors replay through the CLI's path, and every header line they pin parses with
//! an independent Structured Fields parser (the `sfv` crate) to the numbers the comment works out.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use sfv::{BareItem, ListEntry, Parser};
use throttlekit::conformance;
use throttlekit::http::vectors;
use throttlekit::{MemoryStore, Store};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance-vectors/http/headers.json");

#[test]
fn the_http_vectors_all_pass_through_the_cli_path() {
    let mut new_store = || Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>);
    let report = conformance::replay_path(Path::new(FILE), &mut new_store).unwrap();
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    let file = vectors::parse(&std::fs::read_to_string(FILE).unwrap()).unwrap();
    assert_eq!(report.passed, file.header_cases.len() + file.client_key_cases.len());
    assert!(report.passed >= 70);
}

#[test]
fn decision_runners_never_see_the_http_file() {
    // The decision runners of every language glob conformance-vectors/*.json; the HTTP file
    // lives one folder down, and the strict decisions parser would reject it.
    let dir = Path::new(FILE).parent().unwrap().parent().unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            assert!(!vectors::is_http_vectors(&std::fs::read_to_string(&path).unwrap()), "{}", path.display());
        }
    }
    assert!(conformance::parse(&std::fs::read_to_string(FILE).unwrap()).is_err());
}

fn int(item: &BareItem) -> i64 {
    match item {
        BareItem::Integer(i) => *i,
        other => panic!("not an sf-integer: {other:?}"),
    }
}

fn items(value: &str) -> Vec<sfv::Item> {
    Parser::parse_list(value.as_bytes())
        .unwrap_or_else(|e| panic!("{value:?} is not an sf-list: {e}"))
        .into_iter()
        .map(|m| match m {
            ListEntry::Item(i) => i,
            ListEntry::InnerList(_) => panic!("{value:?} has an inner list"),
        })
        .collect()
}

/// Checks one line against the types its family's draft gives it; returns how many it checked.
fn check_line(family: &str, name: &str, value: &str) {
    assert!(value.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{name}: {value:?}");
    match (family, name) {
        ("draft-10", "RateLimit-Policy") => {
            for i in items(value) {
                assert!(matches!(i.bare_item, BareItem::String(_)), "policy member must be an sf-string: {value}");
                int(i.params.get("q").expect("q is required"));
                if let Some(w) = i.params.get("w") {
                    assert!(int(w) > 0);
                }
                if let Some(pk) = i.params.get("pk") {
                    assert!(matches!(pk, BareItem::ByteSeq(b) if b.len() == 32));
                }
            }
        }
        ("draft-10", "RateLimit") => {
            for i in items(value) {
                assert!(matches!(i.bare_item, BareItem::String(_)));
                assert!(int(i.params.get("r").expect("r is required")) >= 0);
                assert!(int(i.params.get("t").expect("we always send t")) >= 0);
            }
        }
        ("draft-7", "RateLimit") => {
            let d = Parser::parse_dictionary(value.as_bytes()).unwrap();
            let keys: Vec<&str> = d.keys().map(String::as_str).collect();
            assert_eq!(keys, ["limit", "remaining", "reset"]);
            for v in d.values() {
                assert!(matches!(v, ListEntry::Item(sfv::Item { bare_item: BareItem::Integer(_), .. })));
            }
        }
        ("draft-6" | "draft-7", "RateLimit-Policy") => {
            for i in items(value) {
                int(&i.bare_item);
            }
        }
        ("draft-6", "RateLimit-Limit" | "RateLimit-Remaining" | "RateLimit-Reset") => {
            int(&Parser::parse_item(value.as_bytes()).unwrap().bare_item);
        }
        ("legacy", "X-RateLimit-Limit" | "X-RateLimit-Remaining" | "X-RateLimit-Reset") | (_, "Retry-After") => {
            assert!(!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()), "{name}: {value}");
            assert!(value.len() <= 15);
        }
        other => panic!("unexpected line {other:?}"),
    }
}

#[test]
fn every_pinned_line_parses_with_sfv() {
    let file = vectors::parse(&std::fs::read_to_string(FILE).unwrap()).unwrap();
    let mut checked = 0;
    for case in &file.header_cases {
        let Some(Value::Array(lines)) = &case.expect else { continue };
        let family = case.request.pointer("/options/family").and_then(Value::as_str).unwrap_or("draft-10");
        for line in lines {
            let (name, value) = (line[0].as_str().unwrap(), line[1].as_str().unwrap());
            check_line(family, name, value);
            checked += 1;
        }
    }
    assert!(checked > 80, "{checked}");
}

#[test]
fn sfv_reads_back_the_escaped_names_and_draft10_numbers() {
    let file = vectors::parse(&std::fs::read_to_string(FILE).unwrap()).unwrap();
    let case = |id: &str| file.header_cases.iter().find(|c| c.id == id).unwrap();
    let line = |id: &str, i: usize| case(id).expect.as_ref().unwrap()[i][1].as_str().unwrap().to_owned();

    let policy = &items(&line("escape/quotes-and-backslashes", 0))[0];
    assert_eq!(policy.bare_item, BareItem::String("we\"ird\\name".into()));

    let state = items(&line("multi/all-denied-binding-first", 1));
    assert_eq!(state[0].bare_item, BareItem::String("user".into()));
    assert_eq!((int(&state[0].params["r"]), int(&state[0].params["t"])), (0, 10));
    assert_eq!(state[1].bare_item, BareItem::String("ip".into()));

    let clamped = &items(&line("clamp/fifteen-digits", 0))[0];
    assert_eq!(int(&clamped.params["q"]), 999_999_999_999_999);
}
