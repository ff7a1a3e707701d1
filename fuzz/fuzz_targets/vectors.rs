//! The conformance vectors parser: any text parses or fails with `config_invalid`; a file that
//! parsed replays on the memory store without panicking.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use throttlekit::{ErrorCode, MemoryStore, Store, conformance};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match conformance::parse(text) {
        Ok(file) => {
            let _ = conformance::replay(&file, &mut || Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>));
        }
        Err(e) => assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}"),
    }
});
