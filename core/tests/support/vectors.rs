//! The conformance vectors files, for the tests that replay them on a store.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use throttlekit::{MemoryStore, Result, Store, conformance};

/// Every `conformance-vectors/*.json`, sorted; never empty.
pub fn files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance-vectors");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("conformance-vectors/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no vectors found in {}", dir.display());
    files
}

/// Replays every vectors file on the stores `stores` makes and asserts that each passes and
/// fails exactly the ops the memory store does (`on` names the store in the message); returns
/// the ops passed.
pub fn replay_every_file_as_memory(stores: &mut dyn FnMut() -> Result<Arc<dyn Store>>, on: &str) -> usize {
    let mut total = 0;
    for file in files() {
        let report = conformance::replay_path(&file, stores).expect("a readable vectors file");
        let memory = conformance::replay_path(&file, &mut || Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>))
            .expect("a readable vectors file");
        assert!(
            report.failed == memory.failed && report.passed == memory.passed,
            "{}: {} {on}, {} on memory\n{}",
            file.display(),
            report.summary(),
            memory.summary(),
            report.failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
        total += report.passed;
    }
    total
}
