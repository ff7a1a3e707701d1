//! [`PostgresOptions`]: where the Postgres store connects and how it keeps its table.

use std::time::Duration;

/// How a [`super::PostgresStore`] connects and keeps its table (docs/postgres.md, "Options").
#[derive(Clone, Debug, PartialEq)]
pub struct PostgresOptions {
    /// A libpq-style URL or key-value string (`postgres://user:password@host:port/db`). TLS
    /// through rustls, with libpq's `sslmode`: `disable`; `allow`/`prefer` (the default: TLS
    /// when offered) and `require` (TLS or no connection) encrypt without verifying the
    /// certificate; `verify-ca` checks its chain against `sslrootcert=FILE` (PEM; absent or
    /// `system`: the system's roots), `verify-full` the chain and the host name
    /// (docs/postgres.md, "TLS").
    pub url: String,
    /// The table: `name` or `schema.name` (lowercase letters, digits, `_`). Default `throttlekit`.
    pub table: String,
    /// Create the table and the functions when missing (on connect). Off: a missing table is
    /// `config_invalid` and the schema is `migrate`'s job ([`super::PostgresStore::migrate`]).
    pub migrate: bool,
    /// Create the table `UNLOGGED` (no WAL: faster writes; a crash empties it and replicas never
    /// see it). Only when the store creates the table.
    pub unlogged: bool,
    /// `SET synchronous_commit = off` on the store's connections: a commit returns before its WAL
    /// is flushed, so a crash of the server can lose the last few hundred ms of decisions.
    pub synchronous_commit_off: bool,
    /// Connections kept (each pipelines any number of calls). Default 4.
    pub pool_size: usize,
    /// How long one call may take, connecting included, before it is `store_unavailable`.
    pub timeout: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How often the sweeper deletes expired rows (`None`: never; expiry on read still holds).
    pub sweep_interval: Option<Duration>,
    /// How many rows one sweep deletes at most.
    pub sweep_batch: i64,
    /// How long past its deadline (by the server's clock) a row stays before the sweeper may
    /// delete it: room for callers whose clocks run behind the server's.
    pub sweep_grace: Duration,
}

impl PostgresOptions {
    /// The defaults for `url`.
    pub fn new(url: impl Into<String>) -> PostgresOptions {
        PostgresOptions {
            url: url.into(),
            table: "throttlekit".to_string(),
            migrate: true,
            unlogged: false,
            synchronous_commit_off: false,
            pool_size: 4,
            timeout: Duration::from_millis(1000),
            connect_timeout: Duration::from_millis(3000),
            sweep_interval: Some(Duration::from_secs(60)),
            sweep_batch: 1000,
            sweep_grace: Duration::from_secs(60),
        }
    }
}
