//! What every request and the reloader share: the current config (swapped whole on reload),
//! the decision engine and the counters.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::json;

use crate::config::{Config, ConfigError};
use crate::decide::{DecideError, Decider, Outcome, RequestIn};
use crate::log;
use crate::metrics::{Door, Metrics};

/// The outcome of the last load attempt.
#[derive(Clone, Debug, Default)]
pub struct LoadStatus {
    /// Configs loaded since start (1 after the first).
    pub generation: u64,
    /// When the current config was loaded (epoch ms).
    pub loaded_at_ms: u64,
    /// Why the last reload failed, if it did (the previous config stays in force).
    pub last_error: Option<String>,
}

/// Shared service state.
pub struct State {
    config: RwLock<Arc<Config>>,
    /// The decision engine.
    pub decider: Decider,
    /// Counters.
    pub metrics: Metrics,
    /// Where the config comes from.
    pub config_path: PathBuf,
    /// The last load's outcome.
    pub status: Mutex<LoadStatus>,
    /// Longest time a request may take (a shorter `grpc-timeout` wins).
    pub timeout: Duration,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl State {
    /// State over an already loaded config.
    pub fn new(config: Config, decider: Decider, config_path: PathBuf, timeout: Duration) -> State {
        State {
            config: RwLock::new(Arc::new(config)),
            decider,
            metrics: Metrics::default(),
            config_path,
            status: Mutex::new(LoadStatus { generation: 1, loaded_at_ms: now_ms(), last_error: None }),
            timeout,
        }
    }

    /// The config in force.
    pub fn config(&self) -> Arc<Config> {
        self.config.read().map(|c| c.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Reloads the config from its path; on error the old config stays and the error is kept.
    pub fn reload(&self) -> Result<(), ConfigError> {
        match Config::load(&self.config_path) {
            Ok(c) => {
                let limits = c.limit_count();
                let domains = c.domains.len();
                match self.config.write() {
                    Ok(mut g) => *g = Arc::new(c),
                    Err(p) => *p.into_inner() = Arc::new(c),
                }
                let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
                s.generation += 1;
                s.loaded_at_ms = now_ms();
                s.last_error = None;
                self.metrics.reload(true);
                log::info(
                    "config reloaded",
                    &[("domains", json!(domains)), ("limits", json!(limits)), ("generation", json!(s.generation))],
                );
                Ok(())
            }
            Err(e) => {
                self.status.lock().unwrap_or_else(|p| p.into_inner()).last_error = Some(e.to_string());
                self.metrics.reload(false);
                log::error("config reload failed; keeping the previous config", &[("error", json!(e.to_string()))]);
                Err(e)
            }
        }
    }

    /// Decides `req` within `deadline` (the service's timeout, or the caller's if shorter).
    /// `Err(None)` is a missed deadline.
    pub async fn decide(
        &self,
        door: Door,
        req: &RequestIn,
        deadline: Option<Duration>,
    ) -> Result<Outcome, Option<DecideError>> {
        // One clock read for both the deadline and the metrics' duration (`timeout` would read
        // it again).
        let started = tokio::time::Instant::now();
        let limit = deadline.map_or(self.timeout, |d| d.min(self.timeout));
        let config = self.config();
        // A limit past what an `Instant` can hold means no deadline, as `timeout` treats it.
        let at = started.checked_add(limit).unwrap_or_else(|| started + Duration::from_secs(30 * 365 * 86_400));
        match tokio::time::timeout_at(at, self.decider.decide(&config, req)).await {
            Ok(result) => {
                self.metrics.record(door, &result, started.elapsed().as_micros() as u64);
                if let Err(e) = &result {
                    log::warn("request refused", &[("domain", json!(req.domain)), ("error", json!(format!("{e:?}")))]);
                }
                result.map_err(Some)
            }
            Err(_) => {
                self.metrics.deadline();
                log::warn(
                    "deadline exceeded",
                    &[("domain", json!(req.domain)), ("deadline_ms", json!(limit.as_millis() as u64))],
                );
                Err(None)
            }
        }
    }
}
