//! Every vectors file in `conformance-vectors/` replays on the memory store with no mismatch,
//! and the runner really does report mismatches.

use std::path::PathBuf;
use std::sync::Arc;

use throttlekit::conformance::{self, Report};
use throttlekit::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Transform};
use throttlekit::{MemoryStore, Store};

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance-vectors")
}

fn replay(path: &std::path::Path) -> Report {
    conformance::replay_path(path, &mut || Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>))
        .expect("readable vectors")
}

#[test]
fn every_vectors_file_replays_on_the_memory_store() {
    let mut files: Vec<_> = std::fs::read_dir(vectors_dir())
        .expect("conformance-vectors/ exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "expected the golden, hand-checked and recorded files, found {files:?}");
    for f in files {
        let report = replay(&f);
        assert!(report.passed > 0, "{}: nothing replayed", f.display());
        assert_eq!(report.failed, 0, "{}: {:#?}", f.display(), report.failures);
    }
}

#[test]
fn the_upstream_golden_file_replays_54_of_54() {
    let report = replay(&vectors_dir().join("upstream-golden-1.5.2.json"));
    assert_eq!((report.passed, report.failed), (54, 0), "{:#?}", report.failures);
}

#[test]
fn the_project_copy_of_the_golden_file_is_unchanged() {
    // ThrottleKit 1.5.2's published file, byte for byte: the SHA-256 of the upstream file.
    use sha2::{Digest, Sha256};
    let ours = std::fs::read(vectors_dir().join("upstream-golden-1.5.2.json")).unwrap();
    let hex: String = Sha256::digest(&ours).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex, "64a02e716c961d24c272d1c530b981809ce98fa2f0eb8b3fe5d2a9c2b5a21ce4",
        "conformance-vectors/upstream-golden-1.5.2.json is not the upstream file any more"
    );
}

#[test]
fn our_suites_all_have_an_id_and_a_comment() {
    for name in ["hand-checked.json", "recorded-timelines.json"] {
        let text = std::fs::read_to_string(vectors_dir().join(name)).unwrap();
        let file = conformance::parse(&text).unwrap();
        for (i, s) in file.suites.iter().enumerate() {
            assert!(s.id.as_deref().is_some_and(|id| !id.is_empty()), "{name} suite {i} has no id");
            assert!(s.comment.as_deref().is_some_and(|c| c.len() > 10), "{name} suite {i} has no comment");
        }
    }
}

#[test]
fn a_wrong_expectation_is_reported_with_suite_op_expected_and_got() {
    let text = r#"{"suites": [{"id": "demo", "strategy": {"kind": "gcra", "options": {"limit": 1, "periodMs": 1000}},
        "key": "k", "ops": [{"now": 0, "expect": {"allowed": true, "remaining": 0}},
                            {"now": 0, "expect": {"allowed": true}}]}]}"#;
    let file = conformance::parse(text).unwrap();
    let report = conformance::replay(&file, &mut || Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>));
    assert_eq!((report.passed, report.failed), (1, 1));
    let line = &report.failures[0];
    assert!(line.contains("demo") && line.contains("op 1") && line.contains("allowed: false"), "{line}");
    assert_eq!(report.summary(), "1 passed, 1 failed");
}

#[test]
fn unknown_fields_are_rejected_not_ignored() {
    for text in [
        r#"{"suites": [], "extra": 1}"#,
        r#"{"suites": [{"id": "x", "strategy": {"kind": "gcra", "options": {"limit": 1, "periodMs": 1}}, "ops": [], "colour": 1}]}"#,
        r#"{"suites": [{"id": "x", "ops": [{"now": 0, "expect": {"alowed": true}}]}]}"#,
    ] {
        let e = conformance::parse(text).unwrap_err();
        assert_eq!(e.code(), throttlekit::ErrorCode::ConfigInvalid, "{text}");
    }
}

/// A store that is always down, saying so.
struct Down;

fn down() -> throttlekit::Error {
    throttlekit::Error::store("down for this test")
}

impl Store for Down {
    fn apply<'a>(&'a self, _: &'a str, _: Now, _: Transform<'a>) -> BoxFuture<'a, throttlekit::Result<Reply>> {
        Box::pin(std::future::ready(Err(down())))
    }
    fn apply_sync(&self, _: &str, _: Now, _: Transform<'_>) -> throttlekit::Result<Reply> {
        Err(down())
    }
    fn apply_multi<'a>(
        &'a self,
        _: throttlekit::Rule,
        _: &'a [DimensionCall<'a>],
        _: Now,
    ) -> BoxFuture<'a, throttlekit::Result<MultiReply>> {
        Box::pin(std::future::ready(Err(down())))
    }
    fn reset<'a>(&'a self, _: &'a str) -> BoxFuture<'a, throttlekit::Result<()>> {
        Box::pin(std::future::ready(Err(down())))
    }
    fn is_sync(&self) -> bool {
        true
    }
}

/// A store that fails is reported with its error, even for a quota (whose limiter fails closed
/// by default): a fallback decision would read as a wrong answer with no cause.
#[test]
fn a_failing_store_is_reported_with_its_error_not_a_fallback_decision() {
    let text = r#"{"suites": [{"id": "down", "strategy": {"kind": "quota", "options": {"limit": 3, "periodMs": 900, "resetCadence": "fixed"}},
        "key": "k", "ops": [{"now": 0, "expect": {"allowed": true}}]}]}"#;
    let file = conformance::parse(text).unwrap();
    let got = conformance::run_suite(&file.suites[0], Arc::new(Down)).unwrap();
    assert!(
        matches!(&got[..], [conformance::Got::Error(throttlekit::ErrorCode::StoreUnavailable, m)] if m.contains("down for this test")),
        "{got:?}"
    );
    let report = conformance::replay(&file, &mut || Ok(Arc::new(Down) as Arc<dyn Store>));
    assert!(report.failures[0].contains("down for this test"), "{:?}", report.failures);
}
