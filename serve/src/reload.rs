//! Hot reload: poll the config files' names, sizes and modification times, and reload when
//! any changes. Polling (not inotify) also sees Kubernetes ConfigMap symlink swaps and works
//! on every filesystem; a bad file keeps the previous config in force.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::config::config_files;
use crate::state::State;

/// The fingerprint of the files under `path`: (name, size, mtime) each.
fn fingerprint(path: &Path) -> Vec<(String, u64, Option<SystemTime>)> {
    let files = config_files(path).unwrap_or_default();
    files
        .iter()
        .map(|f| {
            let meta = std::fs::metadata(f).ok();
            (f.display().to_string(), meta.as_ref().map_or(0, |m| m.len()), meta.and_then(|m| m.modified().ok()))
        })
        .collect()
}

/// Watches the config until the process ends.
pub async fn watch(state: Arc<State>, every: Duration) {
    let mut last = fingerprint(&state.config_path);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = fingerprint(&state.config_path);
        if now != last {
            last = now;
            let _ = state.reload();
        }
    }
}
