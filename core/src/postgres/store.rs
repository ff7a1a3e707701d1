//! [`PostgresStore`]: the driver of the calls of [`super::call`] over tokio-postgres.
//!
//! A small pool of connections, each of which pipelines any number of calls (tokio-postgres
//! sends a statement while earlier ones are still in flight), picked round robin. The store owns
//! a private tokio runtime that runs the connections and every call, so it works from any
//! caller (a binding's own runtime, or none) and closing it stops everything.
//!
//! A call is sent once. A timeout or a connection lost after the statement was sent is
//! `store_unavailable`, and the statement is never sent again: it may have committed, and a
//! resend would charge twice. A connection found closed *before* sending is replaced first.

use std::sync::Arc;
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::runtime::Runtime;
use tokio_postgres::{Client, Statement};

use super::call::{self, StepCall};
use super::inline::{Column, Inline};
use super::options::PostgresOptions;
use super::schema::{self, Statements, Table};
use crate::error::{Error, Result};
use crate::store::{
    BoxFuture, DimensionCall, DimensionLease, MultiGrant, MultiReply, Now, Reply, Rule, Store, Transform,
};

/// The advisory lock key of `migrate` (one schema change at a time) and, plus one, of the sweeper
/// (one sweeping process at a time). Arbitrary; "tk" in ASCII, shifted.
const MIGRATE_LOCK: i64 = 0x746b_0000_0001;
const SWEEP_LOCK: i64 = 0x746b_0000_0002;

/// One connection with the store's statements prepared on it.
struct Conn {
    client: Client,
    step: Statement,
    step_new: Statement,
    inline: [Statement; 4],
    multi: Statement,
    reset: Statement,
}

/// One connection of the pool; `connecting` lets one call at a time replace it, so a burst of
/// calls on a cold pool opens one connection a slot instead of one a call.
#[derive(Default)]
struct Slot {
    conn: Mutex<Option<Arc<Conn>>>,
    connecting: tokio::sync::Mutex<()>,
}

impl Slot {
    fn live(&self) -> Option<Arc<Conn>> {
        self.conn.lock().as_ref().filter(|c| !c.client.is_closed()).cloned()
    }
}

struct Inner {
    options: PostgresOptions,
    table: Table,
    statements: Statements,
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    slots: Vec<Slot>,
    next: AtomicUsize,
    closed: AtomicBool,
    schema_ready: tokio::sync::OnceCell<()>,
}

/// A rate-limit store on Postgres (docs/postgres.md): every decision one statement, atomic
/// under READ COMMITTED, with the same decisions as the memory store and the Redis scripts.
pub struct PostgresStore {
    inner: Arc<Inner>,
    runtime: RwLock<Option<Runtime>>,
}

/// What a client-side Postgres error (not one the server sent) says, with its cause.
fn describe(e: &tokio_postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(src) => format!("{e}: {src}"),
        None => e.to_string(),
    }
}

/// `store_unavailable` for a failed call or connection, `config_invalid` where the fault is
/// the configuration (the schema is missing or of another shape): the server's errors are
/// worded as on a binding's own socket ([`super::session::server_error`]).
fn pg_error(what: &str, e: &tokio_postgres::Error) -> Error {
    match e.as_db_error() {
        Some(db) => super::session::server_error(what, db.code().code(), db.message()),
        None => Error::store(format!("{what}: {}", describe(e))),
    }
}

fn build_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("throttlekit-postgres")
        .enable_all()
        .build()
        .map_err(|e| Error::store(format!("could not start the Postgres store's runtime: {e}")))
}

impl Inner {
    fn new(options: PostgresOptions) -> Result<Inner> {
        let table = Table::new(&options.table)?;
        let url = super::tls::read_url(&options.url)?;
        if options.pool_size == 0 || options.pool_size > 1024 {
            return Err(Error::config("postgres.poolSize", "must be in 1..=1024"));
        }
        if options.timeout.is_zero() || options.connect_timeout.is_zero() {
            return Err(Error::config("postgres.timeout", "must be > 0"));
        }
        if options.sweep_batch < 1 {
            return Err(Error::config("postgres.sweepBatch", "must be >= 1"));
        }
        Ok(Inner {
            statements: Statements::new(&table),
            table,
            config: url.config,
            tls: tokio_postgres_rustls::MakeRustlsConnect::new(super::tls::client_config(
                url.tls,
                url.root_certs.as_deref(),
            )?),
            slots: (0..options.pool_size).map(|_| Slot::default()).collect(),
            next: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            schema_ready: tokio::sync::OnceCell::new(),
            options,
        })
    }

    /// A new connection, its driver spawned on the current (the store's) runtime.
    async fn client(&self) -> Result<Client> {
        let connecting = self.config.connect(self.tls.clone());
        let (client, connection) = tokio::time::timeout(self.options.connect_timeout, connecting)
            .await
            .map_err(|_| {
                Error::store(format!("connecting to Postgres timed out after {:?}", self.options.connect_timeout))
            })?
            .map_err(|e| pg_error("connecting to Postgres", &e))?;
        tokio::spawn(connection);
        if self.options.synchronous_commit_off {
            client
                .batch_execute("SET synchronous_commit = off")
                .await
                .map_err(|e| pg_error("SET synchronous_commit", &e))?;
        }
        Ok(client)
    }

    /// Creates the table and the functions, one migration at a time (an advisory lock held for
    /// the transaction the batch runs in).
    async fn migrate_on(&self, client: &Client) -> Result<()> {
        let batch = format!(
            "SELECT pg_advisory_xact_lock({MIGRATE_LOCK}); {}; {}",
            self.table.create(self.options.unlogged),
            schema::FUNCTIONS
        );
        client.batch_execute(&batch).await.map_err(|e| pg_error("migrating the schema", &e))
    }

    /// The table exists with throttlekit's columns (created first when `migrate` is on).
    async fn ensure_schema(&self, client: &Client) -> Result<()> {
        if self.options.migrate {
            self.migrate_on(client).await?;
        }
        let rows = client
            .query(&schema::shape_query(&self.table), &[])
            .await
            .map_err(|e| pg_error("reading the table's columns", &e))?;
        let columns: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        schema::check_shape(&self.table, &columns)
    }

    async fn connect(&self) -> Result<Conn> {
        let client = self.client().await?;
        self.schema_ready.get_or_try_init(|| self.ensure_schema(&client)).await?;
        let prepare = |sql: &str| {
            let client = &client;
            let sql = sql.to_string();
            async move { client.prepare(&sql).await.map_err(|e| pg_error("preparing the statements", &e)) }
        };
        // Pipelined: one round trip for all of them.
        let s = &self.statements;
        let [gcra, bucket, window, unit_window] = &s.inline;
        let (step, step_new, multi, reset, gcra, bucket, window, unit_window) = tokio::try_join!(
            prepare(&s.step),
            prepare(&s.step_new),
            prepare(&s.multi),
            prepare(&s.reset),
            prepare(gcra),
            prepare(bucket),
            prepare(window),
            prepare(unit_window)
        )?;
        Ok(Conn { client, step, step_new, inline: [gcra, bucket, window, unit_window], multi, reset })
    }

    /// A live connection of the pool, round robin; a closed one is replaced before use (a
    /// statement is never sent on a connection that may have seen it fail).
    async fn conn(&self) -> Result<Arc<Conn>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::store("the Postgres store is closed"));
        }
        self.conn_at(self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len()).await
    }

    /// The connection of slot `i`, connected first when it is missing or closed.
    async fn conn_at(&self, i: usize) -> Result<Arc<Conn>> {
        let slot = &self.slots[i];
        if let Some(c) = slot.live() {
            return Ok(c);
        }
        let _connecting = slot.connecting.lock().await;
        if let Some(c) = slot.live() {
            return Ok(c);
        }
        let conn = Arc::new(self.connect().await?);
        *slot.conn.lock() = Some(conn.clone());
        Ok(conn)
    }

    /// Connects every slot of the pool: the first alone (it creates or checks the schema), the
    /// rest at once. A constructor does this, so calls do not pay for connecting.
    async fn fill(self: Arc<Self>) -> Result<()> {
        self.conn_at(0).await?;
        let mut connecting = tokio::task::JoinSet::new();
        for i in 1..self.slots.len() {
            let inner = self.clone();
            connecting.spawn(async move { inner.conn_at(i).await.map(|_| ()) });
        }
        while let Some(done) = connecting.join_next().await {
            done.map_err(|e| Error::store(format!("connecting failed: {e}")))??;
        }
        Ok(())
    }

    /// One key's transition: [`Statements::step`], which decides on an existing row with one
    /// evaluation of the transition; on a key with no row it only inserted an empty one (no
    /// state, no reply: nothing was decided or charged), and [`Statements::step_new`] decides.
    /// That is not a resend: the first statement committed nothing a decision reads.
    ///
    /// A check on the caller's clock of GCRA, a token bucket or a fixed window is instead its
    /// [`Statements::inline`] statement: one round trip on a new key too, no function call.
    async fn step(&self, key: &str, c: &StepCall) -> Result<Reply> {
        let conn = self.conn().await?;
        let failed =
            |e: tokio_postgres::Error| pg_error("the statement failed (not resent: it may have committed)", &e);
        if let Some((inline, values)) = Inline::bind(c) {
            let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&key];
            params.extend(values.iter().map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)));
            let row = conn.client.query_opt(&conn.inline[inline.index()], &params).await.map_err(failed)?;
            let column = match &row {
                Some(row) => Some(row.try_get::<_, Column>(0).map_err(|e| pg_error("reading the reply", &e))?.0),
                None => None,
            };
            return call::read(c, &inline.reply(c, column)?);
        }
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
            [&key, &c.now, &(c.op as i16), &c.algo, &&c.params[..], &c.cost];
        let row = conn.client.query_one(&conn.step, &params).await.map_err(failed)?;
        let r: Option<Vec<i64>> = row.try_get(0).map_err(|e| pg_error("reading the reply", &e))?;
        let r = match r {
            Some(r) => r,
            None => {
                let row = conn.client.query_one(&conn.step_new, &params).await.map_err(failed)?;
                row.try_get(0).map_err(|e| pg_error("reading the reply", &e))?
            }
        };
        call::read(c, &r)
    }

    /// The multi statement's returned array (a check's or a lease's, as `c` says).
    async fn multi(&self, c: &call::MultiCall) -> Result<Vec<i64>> {
        let conn = self.conn().await?;
        let row = conn
            .client
            .query_one(&conn.multi, &[&c.keys, &c.algos, &c.params, &c.costs, &c.rule, &c.now, &c.wants, &c.lifetimes])
            .await
            .map_err(|e| pg_error("the statement failed (not resent: it may have committed)", &e))?;
        row.try_get(0).map_err(|e| pg_error("reading the reply", &e))
    }

    async fn reset(&self, key: &str) -> Result<()> {
        let conn = self.conn().await?;
        conn.client.execute(&conn.reset, &[&key]).await.map_err(|e| pg_error("reset failed", &e))?;
        Ok(())
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        let conn = self.conn().await?;
        let sql = &self.statements.delete_prefix;
        conn.client.execute(sql, &[&prefix]).await.map_err(|e| pg_error("delete failed", &e))
    }

    /// One sweep, by whichever process takes the advisory lock: `None` when another holds it,
    /// else how many rows it deleted.
    async fn sweep(&self) -> Result<Option<u64>> {
        let conn = self.conn().await?;
        let c = &conn.client;
        let got: bool = c
            .query_one("SELECT pg_try_advisory_lock($1)", &[&SWEEP_LOCK])
            .await
            .map_err(|e| pg_error("sweep", &e))?
            .get(0);
        if !got {
            return Ok(None);
        }
        let grace = self.options.sweep_grace.as_millis() as i64;
        let deleted = c.execute(&self.statements.sweep, &[&grace, &self.options.sweep_batch]).await;
        let unlocked = c.execute("SELECT pg_advisory_unlock($1)", &[&SWEEP_LOCK]).await;
        let deleted = deleted.map_err(|e| pg_error("sweep", &e))?;
        unlocked.map_err(|e| pg_error("sweep", &e))?;
        Ok(Some(deleted))
    }
}

/// Sweeps every `interval` while the store lives.
async fn sweeper(inner: Weak<Inner>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        // A failed sweep is retried at the next interval; expiry on read keeps decisions right.
        let _ = tokio::time::timeout(inner.options.timeout * 10, inner.sweep()).await;
    }
}

/// What a store waits for on its runtime, for the message when the wait runs out.
#[derive(Clone, Copy)]
enum Waiting {
    /// A call: its statement may have reached the server, so it is never sent again.
    Call,
    /// A constructor filling the pool: nothing was decided yet.
    Connect,
}

impl Waiting {
    fn timed_out(self, after: Duration) -> Error {
        match self {
            Waiting::Call => {
                Error::store(format!("the Postgres call timed out after {after:?} (not resent: it may have committed)"))
            }
            Waiting::Connect => Error::store(format!("connecting the Postgres pool timed out after {after:?}")),
        }
    }
}

impl PostgresStore {
    /// Connects one connection (creating the schema when `options.migrate`), checks the table's
    /// shape, and returns the store. A bad URL or table name and a missing or misshapen table
    /// are `config_invalid`; an unreachable server or a refused login `store_unavailable`.
    pub async fn connect(options: PostgresOptions) -> Result<PostgresStore> {
        let inner = Arc::new(Inner::new(options)?);
        let store = PostgresStore { inner, runtime: RwLock::new(Some(build_runtime()?)) };
        let inner = store.inner.clone();
        store.run_within(Waiting::Connect, store.connect_budget(), inner.fill()).await?;
        store.start_sweeper();
        Ok(store)
    }

    /// Creates (or brings up to date) the table and the functions of `options` and returns:
    /// the deploy step for stores that run with `migrate` off.
    pub async fn migrate(options: PostgresOptions) -> Result<()> {
        let store = PostgresStore::connect(migrating(options)).await?;
        store.close().await
    }

    /// [`PostgresStore::migrate`] for callers without an async runtime (the C ABI's deploy step).
    pub fn migrate_blocking(options: PostgresOptions) -> Result<()> {
        let store = PostgresStore::connect_blocking(migrating(options))?;
        // `close` does its work before it returns its (ready) future.
        drop(store.close());
        Ok(())
    }

    /// One sweep now (the background sweeper runs this every `sweep_interval`): `None` when
    /// another process is sweeping, else how many rows were deleted.
    pub async fn sweep(&self) -> Result<Option<u64>> {
        let inner = self.inner.clone();
        self.run(async move { inner.sweep().await }).await
    }

    /// Deletes every key that starts with `prefix` (without an async runtime); how many.
    pub fn delete_prefix_blocking(&self, prefix: &str) -> Result<u64> {
        let (inner, prefix) = (self.inner.clone(), prefix.to_string());
        self.run_blocking(Waiting::Call, self.inner.options.timeout, async move { inner.delete_prefix(&prefix).await })
    }

    /// Whether [`Store::close`] was called (a binding's own sockets stop carrying its calls).
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// The options the store was built with.
    pub fn options(&self) -> &PostgresOptions {
        &self.inner.options
    }

    /// Runs `fut` on the store's runtime within the call timeout.
    async fn run<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        self.run_within(Waiting::Call, self.inner.options.timeout, fut).await
    }

    /// Runs `fut` on the store's runtime within `timeout`.
    async fn run_within<T: Send + 'static>(
        &self,
        what: Waiting,
        timeout: Duration,
        fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let handle = {
            let rt = self.runtime.read();
            let Some(rt) = rt.as_ref() else { return Err(Error::store("the Postgres store is closed")) };
            rt.spawn(async move {
                tokio::time::timeout(timeout, fut).await.unwrap_or_else(|_| Err(what.timed_out(timeout)))
            })
        };
        handle.await.map_err(|_| Error::store("the Postgres store is closed"))?
    }

    /// [`PostgresStore::run`] for a caller without an async runtime: waits on a channel (never
    /// on the store's own runtime thread, which would deadlock).
    fn run_blocking<T: Send + 'static>(
        &self,
        what: Waiting,
        timeout: Duration,
        fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        if tokio::runtime::Handle::try_current()
            .is_ok_and(|h| self.runtime.read().as_ref().is_some_and(|rt| rt.handle().id() == h.id()))
        {
            return Err(Error::not_implemented(
                "a blocking Postgres call from the store's own runtime (await the async method)",
            ));
        }

        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        {
            let rt = self.runtime.read();
            let Some(rt) = rt.as_ref() else { return Err(Error::store("the Postgres store is closed")) };
            rt.spawn(async move {
                let out = tokio::time::timeout(timeout, fut).await.unwrap_or_else(|_| Err(what.timed_out(timeout)));
                let _ = tx.send(out);
            });
        }
        rx.recv().map_err(|_| Error::store("the Postgres store is closed"))?
    }

    /// [`PostgresStore::connect`] for callers without an async runtime (a binding's constructor).
    pub fn connect_blocking(options: PostgresOptions) -> Result<PostgresStore> {
        let inner = Arc::new(Inner::new(options)?);
        let store = PostgresStore { inner, runtime: RwLock::new(Some(build_runtime()?)) };
        let inner = store.inner.clone();
        store.run_blocking(Waiting::Connect, store.connect_budget(), inner.fill())?;
        store.start_sweeper();
        Ok(store)
    }

    /// How long a constructor may take: its two phases ([`Inner::fill`]), the first connection
    /// then the rest together, each connecting (`connect_timeout`) and then migrating or
    /// preparing (a call's `timeout`). A busy server is slow to start backends, so the rest of
    /// the pool can take as long as the first did.
    fn connect_budget(&self) -> Duration {
        2 * (self.inner.options.connect_timeout + self.inner.options.timeout)
    }

    fn start_sweeper(&self) {
        if let Some(interval) = self.inner.options.sweep_interval {
            let weak = Arc::downgrade(&self.inner);
            if let Some(rt) = self.runtime.read().as_ref() {
                rt.spawn(sweeper(weak, interval));
            }
        }
    }
}

/// `options` for [`PostgresStore::migrate`]: creating the schema, and no sweeper for the moment
/// the store lives.
fn migrating(options: PostgresOptions) -> PostgresOptions {
    PostgresOptions { migrate: true, sweep_interval: None, ..options }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.write().take() {
            rt.shutdown_background();
        }
    }
}

impl Store for PostgresStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(async move {
            let c = call::prepare(&transform, now)?;
            let (inner, key) = (self.inner.clone(), key.to_string());
            self.run(async move { inner.step(&key, &c).await }).await
        })
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        Box::pin(async move {
            let c = call::prepare_multi(rule, dims, None, now)?;
            let inner = self.inner.clone();
            self.run(async move { call::read_multi(&c, &inner.multi(&c).await?) }).await
        })
    }

    fn apply_multi_lease<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        leases: &'a [DimensionLease],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiGrant>> {
        Box::pin(async move {
            let c = call::prepare_multi(rule, dims, Some(leases), now)?;
            let inner = self.inner.clone();
            self.run(async move { call::read_multi_lease(&c, &inner.multi(&c).await?) }).await
        })
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let (inner, key) = (self.inner.clone(), key.to_string());
            self.run(async move { inner.reset(&key).await }).await
        })
    }

    fn apply_sync(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
        let c = call::prepare(&transform, now)?;
        let (inner, key) = (self.inner.clone(), key.to_string());
        self.run_blocking(Waiting::Call, self.inner.options.timeout, async move { inner.step(&key, &c).await })
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
        let c = call::prepare_multi(rule, dims, None, now)?;
        let inner = self.inner.clone();
        self.run_blocking(Waiting::Call, self.inner.options.timeout, async move {
            call::read_multi(&c, &inner.multi(&c).await?)
        })
    }

    fn apply_multi_lease_sync(
        &self,
        rule: Rule,
        dims: &[DimensionCall<'_>],
        leases: &[DimensionLease],
        now: Now,
    ) -> Result<MultiGrant> {
        let c = call::prepare_multi(rule, dims, Some(leases), now)?;
        let inner = self.inner.clone();
        self.run_blocking(Waiting::Call, self.inner.options.timeout, async move {
            call::read_multi_lease(&c, &inner.multi(&c).await?)
        })
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        let (inner, key) = (self.inner.clone(), key.to_string());
        self.run_blocking(Waiting::Call, self.inner.options.timeout, async move { inner.reset(&key).await })
    }

    fn is_sync(&self) -> bool {
        true
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        self.inner.closed.store(true, Ordering::Release);
        for slot in &self.inner.slots {
            slot.conn.lock().take();
        }
        if let Some(rt) = self.runtime.write().take() {
            rt.shutdown_background();
        }
        Box::pin(std::future::ready(Ok(())))
    }
}
