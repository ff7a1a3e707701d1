//! [`SqliteStore`]: the state in one SQLite file, shared by every process of one machine that
//! opens it (docs/sqlite.md).
//!
//! SQLite runs in this process, so a decision costs no round trip and core's own transitions can
//! decide: each apply is one `BEGIN IMMEDIATE` transaction (the file's write lock, which
//! serializes every process and thread on the file) that reads the key's row, runs the same
//! [`Transform::run`] the memory store runs, writes the row only when the state changed, and
//! commits. So the decisions are the memory store's by construction, and there is no SQL copy of
//! any algorithm to keep in step with the Rust and the Lua.
//!
//! Why not one `INSERT ... ON CONFLICT DO UPDATE` statement, as on Postgres: with no network
//! between the process and the data, the statement would save nothing, and the arithmetic would
//! have to be written a third time in SQL.
//!
//! Expiry is judged on read against the call's `now` (an expired row reads as absent and is
//! deleted), and rows expired for more than [`SWEEP_GRACE_MS`] are swept in batches.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{Connection, ErrorCode as SqlCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::error::{Error, Result};
use crate::state::State;
use crate::store::multi_apply::{self, DimensionSlots};
use crate::store::{
    BoxFuture, DimensionCall, DimensionLease, MultiGrant, MultiReply, Now, Reply, Rule, Store, Transform,
};

mod row;
mod schema;

/// How long a row stays after it expired before the sweep may delete it (an hour).
///
/// Why a grace this long: an expired row reads as absent, so deleting it changes no decision,
/// unless a caller's clock steps back to before its deadline (the memory store keeps such an
/// entry until its table needs room, and decides with it again). Rows are cheap on disk; an
/// hour covers any clock correction seen in practice.
pub const SWEEP_GRACE_MS: i64 = 3_600_000;

/// Applies between two sweeps of one store, and the most rows one sweep deletes: the sweep
/// rides inside a decision's transaction, so it stays short.
const SWEEP_EVERY: u64 = 1024;
const SWEEP_BATCH: i64 = 512;

/// How a commit reaches the disk (SQLite's `PRAGMA synchronous`, in WAL mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// No `fsync` at commit, only at checkpoints: a commit survives the process crashing; the last
    /// commits before a power loss or an OS crash may be lost (the file stays consistent).
    #[default]
    Normal,
    /// `fsync` of the WAL at every commit: a commit survives a power loss; each decision waits for
    /// the disk.
    Full,
}

impl Synchronous {
    /// `normal` or `full` (any case); anything else is `config_invalid`.
    pub fn parse(s: &str) -> Result<Synchronous> {
        match s.to_ascii_lowercase().as_str() {
            "normal" => Ok(Synchronous::Normal),
            "full" => Ok(Synchronous::Full),
            _ => Err(Error::config("synchronous", &format!("must be normal or full, got {s:?}"))),
        }
    }
}

/// What a [`SqliteStore`] opens and how.
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// The database file (created if missing; its directory must exist).
    pub path: PathBuf,
    /// The table holding the state (a plain identifier; default `throttlekit`).
    pub table: String,
    /// How long an apply waits for another process's write lock before it is
    /// `store_unavailable` (ms, default 5000).
    pub busy_timeout_ms: u64,
    /// How commits reach the disk.
    pub synchronous: Synchronous,
    /// Create the table when it is missing (default). Off: a missing table is `config_invalid`
    /// (for deployments whose schema is managed elsewhere; [`SqliteStore::create_sql`] prints it).
    pub migrate: bool,
    /// Longest full key accepted, in bytes.
    pub max_key_length: usize,
    /// Sweep rows expired for more than [`SWEEP_GRACE_MS`] every 1024 applies (default). Off,
    /// an expired row is deleted only when its key is next touched or by
    /// [`SqliteStore::purge_expired`], so expiry follows nothing but the callers' clock: what
    /// conformance replays need (as Redis's deterministic-replay mode), since a replayed clock
    /// may step back by more than the grace.
    pub sweep: bool,
}

impl SqliteOptions {
    /// The defaults for the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> SqliteOptions {
        SqliteOptions {
            path: path.into(),
            table: "throttlekit".into(),
            busy_timeout_ms: 5000,
            synchronous: Synchronous::Normal,
            migrate: true,
            max_key_length: crate::key::DEFAULT_MAX_LENGTH,
            sweep: true,
        }
    }
}

/// The statements of one table (its name is spliced in once, here).
struct Sql {
    select: String,
    upsert: String,
    delete: String,
    sweep: String,
    clear: String,
}

impl Sql {
    fn new(t: &str) -> Sql {
        Sql {
            select: format!("SELECT kind, a, b, runs, expires_at FROM {t} WHERE key = ?1"),
            upsert: format!(
                "INSERT INTO {t} (key, kind, a, b, runs, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, a = excluded.a, b = excluded.b, \
                 runs = excluded.runs, expires_at = excluded.expires_at"
            ),
            delete: format!("DELETE FROM {t} WHERE key = ?1"),
            sweep: format!("DELETE FROM {t} WHERE key IN (SELECT key FROM {t} WHERE expires_at < ?1 LIMIT ?2)"),
            clear: format!("DELETE FROM {t}"),
        }
    }
}

/// A store in one SQLite file: every process of a machine that opens the same file (and table)
/// shares the limits, atomically. See the module doc and docs/sqlite.md.
pub struct SqliteStore {
    /// `None` once closed. One connection: the file's write lock serializes applies anyway.
    conn: Mutex<Option<Connection>>,
    sql: Sql,
    options: SqliteOptions,
    applies: AtomicU64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.options.path).field("table", &self.options.table).finish()
    }
}

/// `store_unavailable` for a failed SQLite call.
pub(super) fn unavailable(e: rusqlite::Error) -> Error {
    Error::store(format!("sqlite: {e}"))
}

/// A failure while opening: the file itself is unusable as a store (missing directory, no
/// permission, read-only, not a database) → `config_invalid`; anything else (another process
/// holding the lock past the timeout, I/O) → `store_unavailable`.
fn open_error(path: &Path, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(SqlCode::CannotOpen | SqlCode::ReadOnly | SqlCode::NotADatabase | SqlCode::DatabaseCorrupt)
        | Some(SqlCode::PermissionDenied) => {
            Error::config("sqlitePath", &format!("{} cannot be used as a store: {e}", path.display()))
        }
        _ => unavailable(e),
    }
}

/// The steps of opening a file, each waited out while another process sets the same file up.
///
/// Processes that start together open one new file together: one switches it to WAL and creates
/// the table while the others read its header. SQLite answers some of those races with
/// `SQLITE_BUSY` at once, without calling the busy handler (changing the journal mode; a read
/// that finds the WAL index being rebuilt), so each step is tried again, briefly, until the
/// busy timeout has passed. Opening changes no limit's state, so trying a step again is safe.
struct Opening<'a> {
    path: &'a Path,
    deadline: std::time::Instant,
}

impl<'a> Opening<'a> {
    fn new(path: &'a Path, busy_timeout_ms: u64) -> Opening<'a> {
        Opening { path, deadline: std::time::Instant::now() + Duration::from_millis(busy_timeout_ms) }
    }

    fn run<T>(&self, mut step: impl FnMut() -> rusqlite::Result<T>) -> Result<T> {
        loop {
            match step() {
                Err(e)
                    if matches!(e.sqlite_error_code(), Some(SqlCode::DatabaseBusy | SqlCode::DatabaseLocked))
                        && std::time::Instant::now() < self.deadline =>
                {
                    std::thread::sleep(Duration::from_millis(2));
                }
                r => return r.map_err(|e| open_error(self.path, e)),
            }
        }
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the file at `path` with the default options.
    pub fn open(path: impl Into<PathBuf>) -> Result<SqliteStore> {
        SqliteStore::with_options(SqliteOptions::new(path))
    }

    /// Opens the store: WAL mode, the busy timeout and `synchronous` set, the table created (with
    /// `migrate`) or its shape checked.
    pub fn with_options(options: SqliteOptions) -> Result<SqliteStore> {
        schema::check_table_name(&options.table)?;
        if options.max_key_length == 0 {
            return Err(Error::config("maxKeyLength", "must be >= 1"));
        }
        let path = options.path.as_path();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| open_error(path, e))?;
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) {
            return Err(Error::config("sqlitePath", &format!("{} is read-only", path.display())));
        }
        conn.busy_timeout(Duration::from_millis(options.busy_timeout_ms)).map_err(unavailable)?;
        let wait = Opening::new(path, options.busy_timeout_ms);
        // WAL: readers never block the writer, and a commit appends to the log instead of
        // rewriting pages (docs/sqlite.md, "Durability").
        let mode: String = wait.run(|| conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)))?;
        let sync = match options.synchronous {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        };
        wait.run(|| conn.execute_batch(&format!("PRAGMA synchronous = {sync}")))?;
        if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
            return Err(Error::config(
                "sqlitePath",
                &format!("{} could not be switched to WAL mode (it is in {mode} mode)", path.display()),
            ));
        }
        let table = options.table.as_str();
        if !schema::check_shape(table, &wait.run(|| schema::columns(&conn, table))?)? {
            if !options.migrate {
                return Err(Error::config(
                    "table",
                    &format!("{table:?} does not exist in {} (create it, or open with migrate on)", path.display()),
                ));
            }
            wait.run(|| conn.execute_batch(&format!("BEGIN IMMEDIATE; {} COMMIT;", schema::create_sql(table))))?;
            // Another process may have created it first with another shape.
            schema::check_shape(table, &wait.run(|| schema::columns(&conn, table))?)?;
        }
        Ok(SqliteStore { conn: Mutex::new(Some(conn)), sql: Sql::new(table), options, applies: AtomicU64::new(0) })
    }

    /// The statements that create the table `table` and its index (for schemas managed by
    /// migrations elsewhere); `config_invalid` for a name that is not a plain identifier.
    pub fn create_sql(table: &str) -> Result<String> {
        schema::check_table_name(table)?;
        Ok(schema::create_sql(table))
    }

    /// The options it was opened with.
    pub fn options(&self) -> &SqliteOptions {
        &self.options
    }

    /// Deletes up to `limit` rows that expired before `now`; returns how many.
    pub fn purge_expired(&self, now: i64, limit: u32) -> Result<usize> {
        self.with_tx(|tx| tx.prepare_cached(&self.sql.sweep)?.execute(params![now, i64::from(limit)]))
    }

    /// Deletes every row of the table (every key of every limiter on it).
    pub fn clear(&self) -> Result<()> {
        self.with_tx(|tx| tx.prepare_cached(&self.sql.clear)?.execute([])).map(|_| ())
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction on the connection, committed when `f`
    /// succeeds and rolled back otherwise.
    fn with_tx<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>) -> Result<T> {
        self.try_tx(|tx| f(tx).map_err(unavailable))
    }

    fn try_tx<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut guard = self.conn.lock();
        let conn = guard.as_mut().ok_or_else(|| Error::store("sqlite: the store is closed"))?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
        let out = f(&tx)?;
        tx.commit().map_err(unavailable)?;
        Ok(out)
    }

    /// Every `SWEEP_EVERY` applies, deletes a batch of rows expired for more than the grace.
    fn maybe_sweep(&self, tx: &rusqlite::Transaction<'_>, now: i64) -> Result<()> {
        if !self.options.sweep || self.applies.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY != SWEEP_EVERY - 1 {
            return Ok(());
        }
        tx.prepare_cached(&self.sql.sweep)
            .and_then(|mut s| s.execute(params![now.saturating_sub(SWEEP_GRACE_MS), SWEEP_BATCH]))
            .map_err(unavailable)?;
        Ok(())
    }
}

/// One key's row inside a transaction: its state and deadline, read and written.
struct Rows<'t> {
    tx: &'t rusqlite::Transaction<'t>,
    sql: &'t Sql,
}

impl Rows<'_> {
    /// The key's live state, or `None` (absent). An expired row is deleted: it is
    /// gone for good, whatever this apply decides (the memory store and the scripts agree).
    fn read(&self, key: &str, now: i64) -> Result<Option<State>> {
        let got = self
            .tx
            .prepare_cached(&self.sql.select)
            .and_then(|mut s| {
                s.query_row([key], |r| {
                    Ok((
                        row::Columns { kind: r.get(0)?, a: r.get(1)?, b: r.get(2)?, runs: r.get(3)? },
                        r.get::<_, i64>(4)?,
                    ))
                })
                .optional()
            })
            .map_err(unavailable)?;
        match got {
            None => Ok(None),
            Some((_, deadline)) if now > deadline => {
                self.delete(key)?;
                Ok(None)
            }
            Some((cols, _)) => Ok(Some(row::decode(&cols)?)),
        }
    }

    fn write(&self, key: &str, state: &State, deadline: i64) -> Result<()> {
        let c = row::encode(state);
        self.tx
            .prepare_cached(&self.sql.upsert)
            .and_then(|mut s| s.execute(params![key, c.kind, c.a, c.b, c.runs, deadline]))
            .map_err(unavailable)?;
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.tx.prepare_cached(&self.sql.delete).and_then(|mut s| s.execute([key])).map_err(unavailable)?;
        Ok(())
    }

    /// The memory store's `apply_locked`, on a row: run the transition, and write the new state
    /// with the TTL it asks for. A transition that asks for none (a deny, a peek, a forecast)
    /// changed nothing, so nothing is written: a deny costs a read and a commit of no change.
    fn apply(&self, key: &str, now: i64, transform: &Transform<'_>) -> Result<Reply> {
        let mut slot = self.read(key, now)?;
        let step = transform.run(&mut slot, now);
        match (step.ttl_ms, &slot) {
            (Some(ttl), Some(state)) => self.write(key, state, now.saturating_add(ttl))?,
            (Some(_), None) => self.delete(key)?,
            (None, _) => {}
        }
        Ok(step.reply)
    }
}

/// The dimensions of one multi apply, inside its transaction.
struct TxDims<'t> {
    rows: Rows<'t>,
    keys: Vec<&'t str>,
    now: i64,
}

impl DimensionSlots for TxDims<'_> {
    fn plan(
        &mut self,
        i: usize,
        decide: &dyn Fn(Option<&State>) -> (u64, crate::Decision),
    ) -> Result<(u64, crate::Decision)> {
        let state = self.rows.read(self.keys[i], self.now)?;
        Ok(decide(state.as_ref()))
    }

    fn commit(&mut self, i: usize, transform: &Transform<'_>) -> Result<Reply> {
        self.rows.apply(self.keys[i], self.now, transform)
    }
}

impl SqliteStore {
    fn multi(
        &self,
        rule: Rule,
        dims: &[DimensionCall<'_>],
        leases: Option<&[DimensionLease]>,
        now: i64,
    ) -> Result<MultiGrant> {
        for d in dims {
            crate::key::check_length(d.key.len(), self.options.max_key_length)?;
        }
        self.try_tx(|tx| {
            self.maybe_sweep(tx, now)?;
            let keys = dims.iter().map(|d| d.key).collect();
            let mut slots = TxDims { rows: Rows { tx, sql: &self.sql }, keys, now };
            multi_apply::apply(&mut slots, rule, dims, leases, now)
        })
    }
}

/// The async methods run the sync path inline: the store's methods borrow the key and the
/// strategy, which a blocking-pool thread could not. An awaited decision holds its executor
/// thread for the transaction, and for up to `busy_timeout_ms` while another process holds the
/// lock; docs/sqlite.md has the measurement against the blocking pool.
fn ready<T: Send + 'static>(r: Result<T>) -> BoxFuture<'static, Result<T>> {
    Box::pin(std::future::ready(r))
}

impl Store for SqliteStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        ready(self.apply_sync(key, now, transform))
    }

    fn apply_sync(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
        let now = now.in_process_ms();
        crate::key::check_length(key.len(), self.options.max_key_length)?;
        self.try_tx(|tx| {
            self.maybe_sweep(tx, now)?;
            Rows { tx, sql: &self.sql }.apply(key, now, &transform)
        })
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        ready(self.apply_multi_sync(rule, dims, now))
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
        let now = now.in_process_ms();
        self.multi(rule, dims, None, now).map(|g| g.reply)
    }

    fn apply_multi_lease<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        leases: &'a [DimensionLease],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiGrant>> {
        ready(self.apply_multi_lease_sync(rule, dims, leases, now))
    }

    fn apply_multi_lease_sync(
        &self,
        rule: Rule,
        dims: &[DimensionCall<'_>],
        leases: &[DimensionLease],
        now: Now,
    ) -> Result<MultiGrant> {
        let now = now.in_process_ms();
        self.multi(rule, dims, Some(leases), now)
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        ready(self.reset_sync(key))
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        crate::key::check_length(key.len(), self.options.max_key_length)?;
        self.try_tx(|tx| Rows { tx, sql: &self.sql }.delete(key))
    }

    fn is_sync(&self) -> bool {
        true
    }

    fn max_key_length(&self) -> usize {
        self.options.max_key_length
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        let conn = self.conn.lock().take();
        let closed = match conn {
            Some(c) => c.close().map_err(|(_, e)| unavailable(e)),
            None => Ok(()),
        };
        ready(closed)
    }
}

/// Fresh stores for conformance replays: one store on the file at `path` with the sweep off (see
/// [`SqliteOptions::sweep`]), emptied before each suite (every suite starts from no state, as on
/// a fresh memory store).
pub fn conformance_stores(path: &Path) -> Result<impl FnMut() -> Result<Arc<dyn Store>> + use<>> {
    let store = Arc::new(SqliteStore::with_options(SqliteOptions { sweep: false, ..SqliteOptions::new(path) })?);
    Ok(move || {
        store.clear()?;
        Ok(store.clone() as Arc<dyn Store>)
    })
}

#[cfg(test)]
mod tests;
