//! The Postgres store's table, its functions and its statements, as text.
//!
//! One table of one row per key (docs/postgres.md, "Schema"); the transitions are SQL functions
//! (`functions.sql`) that read no table, called from the `SET` of an
//! `INSERT ... ON CONFLICT (key) DO UPDATE`, so the old state is read only through the row the
//! statement has locked; the common checks are the same arithmetic as SQL expressions in that
//! `SET` ([`super::inline`]).

use super::inline::Inline;
use crate::error::{Error, Result};

/// The functions' source, created by `migrate` (idempotent: `CREATE OR REPLACE`).
pub const FUNCTIONS: &str = include_str!("functions.sql");

/// The columns of the table, in order, with their types as `information_schema` names them:
/// what [`shape_query`] compares an existing table with.
pub const COLUMNS: [(&str, &str); 8] = [
    ("key", "text"),
    ("kind", "smallint"),
    ("f", "double precision"),
    ("a", "bigint"),
    ("n", "bigint"),
    ("xs", "ARRAY"),
    ("deadline", "bigint"),
    ("r", "ARRAY"),
];

/// A validated table name: `name` or `schema.name`, each part an SQL identifier of lowercase
/// letters, digits and `_`, starting with a letter or `_`, at most 63 bytes (Postgres's limit),
/// so it can be spliced into statements without quoting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table(String);

impl Table {
    /// Validates `name`; anything else is `config_invalid` naming `postgres.table`.
    pub fn new(name: &str) -> Result<Table> {
        let parts: Vec<&str> = name.split('.').collect();
        let ident = |p: &str| {
            !p.is_empty()
                && p.len() <= 63
                && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                && !p.as_bytes()[0].is_ascii_digit()
        };
        if parts.len() > 2 || !parts.iter().all(|p| ident(p)) {
            return Err(Error::config(
                "postgres.table",
                "must be `name` or `schema.name`, each of lowercase letters, digits and _ (not first), at most 63 bytes",
            ));
        }
        Ok(Table(name.to_string()))
    }

    /// The name as written.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// `(schema, name)`: the schema is `None` for an unqualified name (the search path decides).
    pub fn parts(&self) -> (Option<&str>, &str) {
        match self.0.split_once('.') {
            Some((s, n)) => (Some(s), n),
            None => (None, &self.0),
        }
    }

    /// `CREATE TABLE IF NOT EXISTS`, `UNLOGGED` when asked (docs/postgres.md: an unlogged table is
    /// emptied by a crash and not replicated).
    pub fn create(&self, unlogged: bool) -> String {
        format!(
            "CREATE {}TABLE IF NOT EXISTS {} (\
             key text PRIMARY KEY, kind smallint NOT NULL DEFAULT 0, f double precision, a bigint, \
             n bigint, xs bigint[], deadline bigint, r bigint[])",
            if unlogged { "UNLOGGED " } else { "" },
            self.0
        )
    }
}

/// The statements of one table.
#[derive(Clone, Debug)]
pub struct Statements {
    /// One key's transition on a row that exists: `$1` key, `$2` now (NULL: the server's
    /// clock), `$3` op, `$4` algo, `$5` params, `$6` cost; returns `r`. The transition runs once,
    /// in `DO UPDATE` on the locked row. When the key has no row, the statement inserts an empty
    /// one (kind 0: no state, `r` NULL) and decides nothing; the store then sends [`Self::step_new`].
    pub step: String,
    /// One key's transition whether or not its row exists (the same parameters): the `INSERT`'s
    /// `SELECT` runs the transition on no state for a new key, and `DO UPDATE` runs it on the
    /// locked row otherwise, so it costs two evaluations where the row exists.
    pub step_new: String,
    /// The inline checks ([`super::inline`]), in the order of [`Inline::ALL`]: one statement and
    /// one round trip whether or not the key's row exists, no function call.
    pub inline: [String; 4],
    /// A multi-dimensional check or lease. `$1` keys, `$2` algos, `$3` params, `$4` costs,
    /// `$5` rule, `$6` now, `$7` a lease's wants and `$8` its lifetimes (NULL: a check); returns
    /// the admission and five fields a dimension, then a lease's five grant fields a dimension.
    pub multi: String,
    /// Deletes one key.
    pub reset: String,
    /// Deletes every key that starts with `$1` (conformance replays' namespaces).
    pub delete_prefix: String,
    /// Deletes up to `$2` rows that read as no state by the server's clock less a grace of `$1`
    /// ms: expired ones, and those a peek or a denial on a new key left.
    pub sweep: String,
}

impl Statements {
    /// The statements of `table`.
    pub fn new(table: &Table) -> Statements {
        let t = table.name();
        let args = "$2::bigint, $3::smallint, $4::smallint, $5::float8[], $6::bigint";
        let update = format!(
            "ON CONFLICT (key) DO UPDATE SET (kind, f, a, n, xs, deadline, r) = \
             (SELECT * FROM throttlekit_v1_step(s.kind, s.f, s.a, s.n, s.xs, s.deadline, {args})) \
             RETURNING r"
        );
        Statements {
            step: format!("INSERT INTO {t} AS s (key) VALUES ($1::text) {update}"),
            step_new: format!(
                "INSERT INTO {t} AS s (key, kind, f, a, n, xs, deadline, r) \
                 SELECT $1::text, x.* FROM throttlekit_v1_step(0::smallint, NULL, NULL, NULL, NULL, NULL, {args}) x \
                 {update}"
            ),
            inline: Inline::ALL.map(|i| i.statement(t)),
            multi: format!(
                "SELECT throttlekit_v1_multi('{t}'::regclass, $1::text[], $2::smallint[], $3::float8[], \
                 $4::bigint[], $5::smallint, $6::bigint, $7::bigint[], $8::bigint[])"
            ),
            reset: format!("DELETE FROM {t} WHERE key = $1"),
            delete_prefix: format!("DELETE FROM {t} WHERE starts_with(key, $1)"),
            sweep: format!(
                "DELETE FROM {t} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {t} \
                 WHERE kind = 0 OR deadline < throttlekit_v1_now() - $1 LIMIT $2 FOR UPDATE SKIP LOCKED))"
            ),
        }
    }
}

/// The query that lists `table`'s columns and types, in order (empty: no such table).
pub fn shape_query(table: &Table) -> String {
    match table.parts() {
        (Some(schema), name) => format!(
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = '{schema}' AND table_name = '{name}' ORDER BY ordinal_position"
        ),
        (None, name) => format!(
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = '{name}' ORDER BY ordinal_position"
        ),
    }
}

/// Checks the columns [`shape_query`] returned: `config_invalid` when the table is missing (and
/// the store may not create it) or has another shape.
pub fn check_shape(table: &Table, columns: &[(String, String)]) -> Result<()> {
    if columns.is_empty() {
        return Err(Error::config(
            "postgres.table",
            &format!("`{}` does not exist (call migrate, or let the store create it)", table.name()),
        ));
    }
    let found: Vec<(&str, &str)> = columns.iter().map(|(c, t)| (c.as_str(), t.as_str())).collect();
    if found != COLUMNS {
        let want: Vec<String> = COLUMNS.iter().map(|(c, t)| format!("{c} {t}")).collect();
        let got: Vec<String> = found.iter().map(|(c, t)| format!("{c} {t}")).collect();
        return Err(Error::config(
            "postgres.table",
            &format!("`{}` has columns ({}), not throttlekit's ({})", table.name(), got.join(", "), want.join(", ")),
        ));
    }
    Ok(())
}
