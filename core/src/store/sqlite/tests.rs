use std::sync::Arc;

use super::*;
use crate::{ErrorCode, FailPolicy, Limiter, ManualClock, MemoryStore, Strategy};

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tk-sqlite-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn code(r: Result<SqliteStore>) -> ErrorCode {
    r.expect_err("expected an error").code()
}

#[test]
fn a_path_in_a_missing_directory_is_config_invalid() {
    let dir = TempDir::new("missing");
    let err = SqliteStore::open(dir.file("no/such/dir/x.db")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigInvalid, "{err}");
    assert!(err.message().contains("no/such/dir"), "{err}");
}

#[test]
fn a_file_that_is_not_a_database_is_config_invalid() {
    let dir = TempDir::new("corrupt");
    let path = dir.file("x.db");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigInvalid, "{err}");
    assert!(err.message().contains("not a database"), "{err}");
}

#[test]
fn a_read_only_file_is_config_invalid() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // root writes a file whatever its mode, so there is no read-only file to open.
        eprintln!("skipped: running as root, a file's mode cannot make it read-only");
        return;
    }
    let dir = TempDir::new("ro");
    let path = dir.file("x.db");
    drop(SqliteStore::open(&path).unwrap());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert_eq!(code(SqliteStore::open(&path)), ErrorCode::ConfigInvalid);
}

#[test]
fn a_table_of_another_shape_is_config_invalid() {
    let dir = TempDir::new("shape");
    let path = dir.file("x.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE throttlekit (key TEXT PRIMARY KEY, hits INTEGER)").unwrap();
    drop(conn);
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigInvalid);
    assert!(err.message().contains("another shape"), "{err}");
    // Another table name in the same file is fine.
    let mut o = SqliteOptions::new(&path);
    o.table = "limits".into();
    SqliteStore::with_options(o).unwrap();
}

#[test]
fn a_missing_table_with_migrate_off_is_config_invalid_and_create_sql_makes_it() {
    let dir = TempDir::new("migrate");
    let path = dir.file("x.db");
    let mut o = SqliteOptions::new(&path);
    o.migrate = false;
    let err = SqliteStore::with_options(o.clone()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigInvalid);
    assert!(err.message().contains("does not exist"), "{err}");
    Connection::open(&path).unwrap().execute_batch(&SqliteStore::create_sql("throttlekit").unwrap()).unwrap();
    SqliteStore::with_options(o).unwrap();
}

#[test]
fn bad_options_are_config_invalid() {
    let dir = TempDir::new("opts");
    let mut o = SqliteOptions::new(dir.file("x.db"));
    o.table = "x; DROP TABLE y".into();
    assert_eq!(code(SqliteStore::with_options(o.clone())), ErrorCode::ConfigInvalid);
    o.table = "ok".into();
    o.max_key_length = 0;
    assert_eq!(code(SqliteStore::with_options(o)), ErrorCode::ConfigInvalid);
    assert_eq!(Synchronous::parse("sometimes").unwrap_err().code(), ErrorCode::ConfigInvalid);
    assert_eq!(Synchronous::parse("FULL").unwrap(), Synchronous::Full);
}

#[test]
fn a_lock_held_past_the_busy_timeout_is_store_unavailable_and_the_fail_policy_decides() {
    let dir = TempDir::new("busy");
    let path = dir.file("x.db");
    let mut o = SqliteOptions::new(&path);
    o.busy_timeout_ms = 50;
    let store = Arc::new(SqliteStore::with_options(o).unwrap());
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = std::time::Instant::now();
    let t = Transform::Check { strategy: &Strategy::gcra(5, 1000, None).unwrap(), cost: 1 };
    let err = store.apply_sync("k", Now::At(1), t).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
    assert!(started.elapsed() >= Duration::from_millis(50), "{:?}", started.elapsed());
    let open = Limiter::builder(Strategy::gcra(5, 1000, None).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::FailOpen)
        .build();
    let d = open.check_sync_at("k", 1, 1).unwrap();
    assert!(d.allowed);
    let closed = Limiter::builder(Strategy::gcra(5, 1000, None).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::FailClosed)
        .build();
    assert!(!closed.check_sync_at("k", 1, 1).unwrap().allowed);
    holder.execute_batch("ROLLBACK").unwrap();
    // The lock released, the store decides again, and the refused calls charged nothing.
    assert_eq!(closed.check_sync_at("k", 1, 1).unwrap().remaining, 4);
}

#[test]
fn after_close_every_call_is_store_unavailable() {
    let dir = TempDir::new("close");
    let store = SqliteStore::open(dir.file("x.db")).unwrap();
    futures_lite_block_on(store.close()).unwrap();
    let t = Transform::Peek { strategy: &Strategy::gcra(5, 1000, None).unwrap() };
    assert_eq!(store.apply_sync("k", Now::At(1), t).unwrap_err().code(), ErrorCode::StoreUnavailable);
    assert_eq!(store.reset_sync("k").unwrap_err().code(), ErrorCode::StoreUnavailable);
    futures_lite_block_on(store.close()).unwrap();
}

fn futures_lite_block_on<T>(f: BoxFuture<'_, T>) -> T {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

#[test]
fn state_persists_across_stores_on_one_file_and_expired_rows_are_swept() {
    let dir = TempDir::new("persist");
    let path = dir.file("x.db");
    let s = Strategy::fixed_window(3, 1000).unwrap();
    let check = |store: Arc<SqliteStore>, now| {
        Limiter::builder(s.clone()).store(store).clock(Arc::new(ManualClock::new(now))).build().check_sync("k", 1)
    };
    let a = Arc::new(SqliteStore::open(&path).unwrap());
    assert_eq!(check(a.clone(), 10).unwrap().remaining, 2);
    let b = Arc::new(SqliteStore::open(&path).unwrap());
    assert_eq!(check(b.clone(), 20).unwrap().remaining, 1);
    assert_eq!(check(a.clone(), 30).unwrap().remaining, 0);
    assert!(!check(b.clone(), 40).unwrap().allowed);
    // The row lives until the window's end; a purge before that keeps it, after it deletes it.
    assert_eq!(a.purge_expired(999, 100).unwrap(), 0);
    assert_eq!(a.purge_expired(1001, 100).unwrap(), 1);
    assert_eq!(check(b, 1001).unwrap().remaining, 2);
}

#[test]
fn a_denied_check_writes_nothing() {
    let dir = TempDir::new("deny");
    let path = dir.file("x.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let limiter = Limiter::builder(Strategy::gcra(1, 1000, None).unwrap()).store(store).build();
    assert!(limiter.check_sync_at("k", 1, 100).unwrap().allowed);
    let conn = Connection::open(&path).unwrap();
    let row = || -> (i64, i64) {
        conn.query_row("SELECT a, expires_at FROM throttlekit", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
    };
    let before = row();
    let data_version = || -> i64 { conn.query_row("PRAGMA data_version", [], |r| r.get(0)).unwrap() };
    let v = data_version();
    assert!(!limiter.check_sync_at("k", 1, 200).unwrap().allowed);
    // Another connection's commit bumps data_version; a deny commits a read-only transaction.
    assert_eq!(data_version(), v);
    assert_eq!(row(), before);
}

#[test]
fn every_strategy_decides_as_memory_on_a_short_timeline() {
    let dir = TempDir::new("equal");
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.file("x.db")).unwrap());
    let strategies = [
        Strategy::gcra(3, 1000, Some(2)).unwrap(),
        Strategy::token_bucket(3, 2.5).unwrap(),
        Strategy::fixed_window(3, 1000).unwrap(),
        Strategy::sliding_window(3, 1000, Some(4)).unwrap(),
        Strategy::sliding_window_log(3, 1000).unwrap(),
    ];
    for (n, s) in strategies.into_iter().enumerate() {
        let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let run = |store: Arc<dyn Store>| {
            let l = Limiter::builder(s.clone()).store(store).prefix(format!("s{n}")).build();
            let mut out = Vec::new();
            for (i, now) in [0i64, 1, 1, 2, 300, 300, 999, 1000, 1001, 700, 2500, 2501, 9000].into_iter().enumerate() {
                out.push((l.check_sync_at("k", 1 + (i as u64 % 2), now), l.peek_sync_at("k", now)));
            }
            out
        };
        assert_eq!(run(sqlite.clone()), run(memory), "{s:?}");
    }
}

#[test]
fn the_sweep_deletes_rows_expired_for_longer_than_the_grace_every_1024_applies() {
    let dir = TempDir::new("sweep");
    let path = dir.file("x.db");
    let store = SqliteStore::open(&path).unwrap();
    let s = Strategy::fixed_window(5, 1000).unwrap();
    let check =
        |key: &str, now| store.apply_sync(key, Now::At(now), Transform::Check { strategy: &s, cost: 1 }).unwrap();
    // 600 rows that expire at 1000 and one that expires later.
    for i in 0..600 {
        check(&format!("old{i}"), 0);
    }
    check("late", SWEEP_GRACE_MS);
    let rows = || -> i64 {
        Connection::open(&path).unwrap().query_row("SELECT count(*) FROM throttlekit", [], |r| r.get(0)).unwrap()
    };
    assert_eq!(rows(), 601);
    let now = 1000 + SWEEP_GRACE_MS + 1;
    for _ in 0..(SWEEP_EVERY - 602) {
        check("live", now);
    }
    assert_eq!(rows(), 602, "no sweep before the 1024th apply");
    check("live", now);
    assert_eq!(rows(), 602 - SWEEP_BATCH, "one batch swept");
    // With the sweep off, nothing is deleted but what is touched.
    let off = SqliteStore::with_options(SqliteOptions { sweep: false, ..SqliteOptions::new(&path) }).unwrap();
    for _ in 0..SWEEP_EVERY {
        off.apply_sync("live", Now::At(now), Transform::Check { strategy: &s, cost: 0 }).ok();
    }
    assert_eq!(rows(), 602 - SWEEP_BATCH);
}

/// Processes that start together open one new file together (`Opening` says why that races).
#[test]
fn many_openers_of_one_new_file_all_open_it() {
    for round in 0..30 {
        let dir = TempDir::new("race");
        let path = dir.file("x.db");
        let barrier = Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    SqliteStore::open(path).map(|_| ())
                })
            })
            .collect();
        for h in handles {
            if let Err(e) = h.join().unwrap() {
                panic!("round {round}: {e}");
            }
        }
    }
}
