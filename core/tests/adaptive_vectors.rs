//! `conformance-vectors/adaptive/*.json` replays with 0 mismatches through core (the reference
//! every binding is held to), and the runner notices a wrong expectation.

use throttlekit::concurrency::vectors;

fn files() -> Vec<std::path::PathBuf> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance-vectors/adaptive");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the adaptive vectors directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_adaptive_vectors_file_replays() {
    let files = files();
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(vectors::is_adaptive_vectors(&text));
        let file = vectors::parse(&text).expect("valid");
        let report = vectors::replay(&file);
        println!("{}: {}", path.display(), report.summary());
        assert_eq!(report.failed, 0, "{:#?}", report.failures);
        assert!(report.passed > 1000, "{} events", report.passed);
        // Every algorithm has a timeline whose limit moves.
        for algorithm in ["aimd", "vegas", "gradient2"] {
            let case = file.cases.iter().find(|c| c.id == format!("timeline-{algorithm}")).expect("a timeline");
            let limits: std::collections::BTreeSet<u32> =
                case.events.iter().filter_map(|e| e.expect.map(|x| x.limit)).collect();
            assert!(limits.len() > 5, "{algorithm}: the limit took {} values", limits.len());
        }
    }
}

#[test]
fn a_wrong_expected_limit_is_a_failure_naming_the_case_and_event() {
    let path = &files()[0];
    let mut file = vectors::parse(&std::fs::read_to_string(path).expect("readable")).expect("valid");
    let case = file.cases.iter_mut().find(|c| c.id == "timeline-gradient2").expect("a timeline");
    let event = case.events.iter_mut().rev().find(|e| e.expect.is_some()).expect("an expectation");
    event.expect.as_mut().expect("set").limit += 1;
    let report = vectors::replay(&file);
    assert_eq!(report.failed, 1);
    assert!(report.failures[0].starts_with("timeline-gradient2 event "), "{}", report.failures[0]);
}

#[test]
fn unknown_fields_are_rejected() {
    let text = r#"{"format": "throttlekit-adaptive/1", "comment": "", "cases": [], "extra": 1}"#;
    assert_eq!(vectors::parse(text).expect_err("strict").code(), throttlekit::ErrorCode::ConfigInvalid);
}
