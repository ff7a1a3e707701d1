//! The SQL stores' options by name: the one mapping from the options every binding takes
//! (Python's keyword arguments, Node's and Java's option objects, Ruby's record, C's fields) onto
//! core's `PostgresOptions` and `SqliteOptions`: `from_pairs`, `set` and `kind` on each.
//!
//! A binding reads each value as its [`OptionKind`] says, in its own language's types and with
//! its own type errors, then hands `(name, value)` pairs to `from_pairs`. Names are matched in
//! any binding's spelling: case and `_` are ignored, so are a dotted path in front (Node's
//! `postgresStore.poolSize`) and a duration's `ms` unit (Java's `timeout` for `timeoutMs`).
//! Every error is `config_invalid` and names the option as the binding spelled it.

use crate::error::{Error, Result};

/// What an option holds, so that a binding reads its caller's value as the right type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// A string (`table`, `synchronous`).
    Text,
    /// A boolean (`migrate`, `unlogged`, ...).
    Flag,
    /// A whole number; durations are in ms.
    Count,
}

/// An option's value as a binding read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionValue {
    /// For an [`OptionKind::Text`] option.
    Text(String),
    /// For an [`OptionKind::Flag`] option.
    Flag(bool),
    /// For an [`OptionKind::Count`] option; a negative count is `config_invalid`.
    Int(i64),
}

impl OptionValue {
    /// A count where 0 means "the default" (the C ABI's fields): `None` for 0.
    pub fn unless_zero(n: u64) -> Option<OptionValue> {
        (n != 0).then(|| OptionValue::Int(i64::try_from(n).unwrap_or(i64::MAX)))
    }
}

/// `pool_size`, `poolSize`, `postgresStore.poolSize` → `poolsize`; `timeout_ms` → `timeout`.
fn canonical(name: &str) -> String {
    let last = name.rsplit('.').next().unwrap_or(name);
    let key: String = last.chars().filter(|c| *c != '_').map(|c| c.to_ascii_lowercase()).collect();
    match key.strip_suffix("ms") {
        Some(unitless) if !unitless.is_empty() => unitless.to_string(),
        _ => key,
    }
}

/// The option of `table` that `name` names, with its kind.
fn find(table: &[(&'static str, OptionKind)], name: &str) -> Result<(&'static str, OptionKind)> {
    let key = canonical(name);
    table.iter().copied().find(|(n, _)| canonical(n) == key).ok_or_else(|| Error::config(name, "is not an option"))
}

fn kind_of(table: &[(&'static str, OptionKind)], name: &str) -> Option<OptionKind> {
    find(table, name).ok().map(|(_, kind)| kind)
}

/// `options` with every given (`Some`) value of `pairs` set in order by `set`: both stores'
/// `from_pairs`.
fn set_all<T, N: AsRef<str>>(
    mut options: T,
    pairs: impl IntoIterator<Item = (N, Option<OptionValue>)>,
    set: fn(&mut T, &str, OptionValue) -> Result<()>,
) -> Result<T> {
    for (name, value) in pairs {
        if let Some(value) = value {
            set(&mut options, name.as_ref(), value)?;
        }
    }
    Ok(options)
}

fn text(name: &str, v: OptionValue) -> Result<String> {
    match v {
        OptionValue::Text(s) => Ok(s),
        _ => Err(Error::config(name, "must be a string")),
    }
}

fn flag(name: &str, v: OptionValue) -> Result<bool> {
    match v {
        OptionValue::Flag(b) => Ok(b),
        _ => Err(Error::config(name, "must be a boolean")),
    }
}

/// A whole number of at least `min`.
fn count(name: &str, v: OptionValue, min: i64) -> Result<u64> {
    match v {
        OptionValue::Int(n) if n >= min => Ok(n as u64),
        OptionValue::Int(_) => Err(Error::config(name, &format!("must be >= {min}"))),
        _ => Err(Error::config(name, "must be an integer")),
    }
}

#[cfg(feature = "postgres")]
fn ms(name: &str, v: OptionValue) -> Result<std::time::Duration> {
    Ok(std::time::Duration::from_millis(count(name, v, 0)?))
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::{OptionKind, OptionValue, count, find, flag, kind_of, ms, set_all, text};
    use crate::error::Result;
    use crate::postgres::PostgresOptions;

    /// Every option but the URL, under its Rust name (durations in ms).
    const OPTIONS: &[(&str, OptionKind)] = &[
        ("table", OptionKind::Text),
        ("migrate", OptionKind::Flag),
        ("unlogged", OptionKind::Flag),
        ("synchronous_commit_off", OptionKind::Flag),
        ("pool_size", OptionKind::Count),
        ("timeout_ms", OptionKind::Count),
        ("connect_timeout_ms", OptionKind::Count),
        ("sweep_interval_ms", OptionKind::Count),
        ("sweep_batch", OptionKind::Count),
        ("sweep_grace_ms", OptionKind::Count),
    ];

    impl PostgresOptions {
        /// What the option `name` holds, in any binding's spelling; `None` when it is none.
        pub fn kind(name: &str) -> Option<OptionKind> {
            kind_of(OPTIONS, name)
        }

        /// Sets the option `name` (any binding's spelling) to `value`. An unknown name, a value
        /// of the wrong kind or a negative count is `config_invalid` naming `name`; the rest of
        /// the checks are the store's, when it connects.
        pub fn set(&mut self, name: &str, value: OptionValue) -> Result<()> {
            let (option, _) = find(OPTIONS, name)?;
            match option {
                "table" => self.table = text(name, value)?,
                "migrate" => self.migrate = flag(name, value)?,
                "unlogged" => self.unlogged = flag(name, value)?,
                "synchronous_commit_off" => self.synchronous_commit_off = flag(name, value)?,
                "pool_size" => self.pool_size = usize::try_from(count(name, value, 0)?).unwrap_or(usize::MAX),
                "timeout_ms" => self.timeout = ms(name, value)?,
                "connect_timeout_ms" => self.connect_timeout = ms(name, value)?,
                // 0 turns the sweeper off (expiry on read still holds).
                "sweep_interval_ms" => self.sweep_interval = Some(ms(name, value)?).filter(|d| !d.is_zero()),
                "sweep_batch" => self.sweep_batch = i64::try_from(count(name, value, 0)?).unwrap_or(i64::MAX),
                "sweep_grace_ms" => self.sweep_grace = ms(name, value)?,
                _ => unreachable!("every name of OPTIONS is set above"),
            }
            Ok(())
        }

        /// The defaults for `url`, then every given (`Some`) value of `pairs` set in order.
        pub fn from_pairs<N: AsRef<str>>(
            url: impl Into<String>,
            pairs: impl IntoIterator<Item = (N, Option<OptionValue>)>,
        ) -> Result<PostgresOptions> {
            set_all(PostgresOptions::new(url), pairs, PostgresOptions::set)
        }
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use std::path::PathBuf;

    use super::{OptionKind, OptionValue, count, find, flag, kind_of, set_all, text};
    use crate::error::Result;
    use crate::store::sqlite::{SqliteOptions, Synchronous};

    /// Every option but the path, under its Rust name.
    const OPTIONS: &[(&str, OptionKind)] = &[
        ("table", OptionKind::Text),
        ("busy_timeout_ms", OptionKind::Count),
        ("synchronous", OptionKind::Text),
        ("migrate", OptionKind::Flag),
        ("max_key_length", OptionKind::Count),
        ("sweep", OptionKind::Flag),
    ];

    impl SqliteOptions {
        /// What the option `name` holds, in any binding's spelling; `None` when it is none.
        pub fn kind(name: &str) -> Option<OptionKind> {
            kind_of(OPTIONS, name)
        }

        /// Sets the option `name` (any binding's spelling) to `value`. An unknown name, a value
        /// of the wrong kind, a negative count, a `max_key_length` below 1 or a `synchronous`
        /// other than `normal`/`full` is `config_invalid`; the rest are checked on opening.
        pub fn set(&mut self, name: &str, value: OptionValue) -> Result<()> {
            let (option, _) = find(OPTIONS, name)?;
            match option {
                "table" => self.table = text(name, value)?,
                "busy_timeout_ms" => self.busy_timeout_ms = count(name, value, 0)?,
                "synchronous" => self.synchronous = Synchronous::parse(&text(name, value)?)?,
                "migrate" => self.migrate = flag(name, value)?,
                "max_key_length" => self.max_key_length = usize::try_from(count(name, value, 1)?).unwrap_or(usize::MAX),
                "sweep" => self.sweep = flag(name, value)?,
                _ => unreachable!("every name of OPTIONS is set above"),
            }
            Ok(())
        }

        /// The defaults for the file at `path`, then every given (`Some`) value of `pairs` set
        /// in order.
        pub fn from_pairs<N: AsRef<str>>(
            path: impl Into<PathBuf>,
            pairs: impl IntoIterator<Item = (N, Option<OptionValue>)>,
        ) -> Result<SqliteOptions> {
            set_all(SqliteOptions::new(path), pairs, SqliteOptions::set)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_in_every_bindings_spelling() {
        for spelled in ["timeout_ms", "timeoutMs", "timeout", "postgresStore.timeoutMs", "TIMEOUT_MS"] {
            assert_eq!(canonical(spelled), "timeout", "{spelled}");
        }
        assert_eq!(canonical("pool_size"), canonical("poolSize"));
        assert_eq!(canonical("ms"), "ms");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_pairs_set_core_options_and_errors_name_the_option_as_given() {
        use crate::postgres::PostgresOptions;
        use std::time::Duration;
        let o = PostgresOptions::from_pairs(
            "postgres://h/db",
            [
                ("table", Some(OptionValue::Text("limits".into()))),
                ("poolSize", Some(OptionValue::Int(2))),
                ("timeout_ms", Some(OptionValue::Int(250))),
                ("sweepIntervalMs", Some(OptionValue::Int(0))),
                ("unlogged", None),
                ("synchronousCommitOff", Some(OptionValue::Flag(true))),
            ],
        )
        .unwrap();
        assert_eq!((o.table.as_str(), o.pool_size, o.timeout), ("limits", 2, Duration::from_millis(250)));
        assert_eq!((o.sweep_interval, o.unlogged, o.synchronous_commit_off), (None, false, true));
        assert_eq!(PostgresOptions::kind("connect_timeout_ms"), Some(OptionKind::Count));
        assert_eq!(PostgresOptions::kind("poolsize"), Some(OptionKind::Count));
        assert_eq!(PostgresOptions::kind("busyTimeoutMs"), None);

        let err = |name: &str, v: OptionValue| PostgresOptions::new("u").set(name, v).unwrap_err();
        let e = err("postgresStore.poolSize", OptionValue::Int(-1));
        assert_eq!((e.code().as_str(), e.message()), ("config_invalid", "postgresStore.poolSize must be >= 0"));
        assert_eq!(err("timeout", OptionValue::Int(-5)).message(), "timeout must be >= 0");
        assert_eq!(err("migrate", OptionValue::Int(1)).message(), "migrate must be a boolean");
        assert_eq!(err("table", OptionValue::Flag(true)).message(), "table must be a string");
        assert_eq!(err("sweep_batch", OptionValue::Text("1".into())).message(), "sweep_batch must be an integer");
        assert_eq!(err("sweep", OptionValue::Flag(true)).message(), "sweep is not an option");
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn sqlite_pairs_set_core_options_and_errors_name_the_option_as_given() {
        use crate::store::sqlite::{SqliteOptions, Synchronous};
        let o = SqliteOptions::from_pairs(
            "/tmp/x.db",
            [
                ("busyTimeoutMs", Some(OptionValue::Int(10))),
                ("synchronous", Some(OptionValue::Text("FULL".into()))),
                ("max_key_length", Some(OptionValue::Int(1))),
                ("migrate", Some(OptionValue::Flag(false))),
                ("sweep", Some(OptionValue::Flag(false))),
            ],
        )
        .unwrap();
        assert_eq!((o.busy_timeout_ms, o.synchronous, o.max_key_length), (10, Synchronous::Full, 1));
        assert!(!o.migrate && !o.sweep);
        assert_eq!(SqliteOptions::kind("synchronous"), Some(OptionKind::Text));

        let err = |name: &str, v: OptionValue| SqliteOptions::new("p").set(name, v).unwrap_err();
        assert_eq!(err("maxKeyLength", OptionValue::Int(0)).message(), "maxKeyLength must be >= 1");
        assert_eq!(err("busyTimeout", OptionValue::Int(-1)).message(), "busyTimeout must be >= 0");
        assert_eq!(
            err("synchronous", OptionValue::Text("off".into())).message(),
            "synchronous must be normal or full, got \"off\""
        );
        assert_eq!(err("poolSize", OptionValue::Int(1)).code().as_str(), "config_invalid");
    }
}
