//! The store's one table: its name's rules, its `CREATE`, and the check that an existing table
//! has the shape this store reads and writes (a table of another shape is `config_invalid`
//! before any decision, not a stream of failing statements later).

use rusqlite::Connection;

use crate::error::{Error, Result};

/// The table's columns in order: name, declared type, part of the primary key.
const COLUMNS: [(&str, &str, bool); 6] = [
    ("key", "TEXT", true),
    ("kind", "INTEGER", false),
    ("a", "INTEGER", false),
    ("b", "INTEGER", false),
    ("runs", "BLOB", false),
    ("expires_at", "INTEGER", false),
];

/// `config_invalid` unless `name` is a plain identifier (it is spliced into every statement,
/// so it cannot be a parameter): a letter or `_`, then letters, digits or `_`, at most 63.
pub(super) fn check_table_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 63
        && !name.to_ascii_lowercase().starts_with("sqlite_");
    if ok {
        Ok(())
    } else {
        Err(Error::config(
            "table",
            &format!("must be a letter or _ then letters, digits or _ (at most 63, not sqlite_*), got {name:?}"),
        ))
    }
}

/// The `CREATE` statements of the table `name` and its expiry index.
pub(super) fn create_sql(name: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {name} (\n  key TEXT NOT NULL PRIMARY KEY,\n  kind INTEGER NOT NULL,\n  \
         a INTEGER NOT NULL,\n  b INTEGER NOT NULL,\n  runs BLOB,\n  expires_at INTEGER NOT NULL\n) WITHOUT ROWID;\n\
         CREATE INDEX IF NOT EXISTS {name}_expires_at ON {name} (expires_at);"
    )
}

/// The table's columns, none when it does not exist.
pub(super) fn columns(conn: &Connection, name: &str) -> rusqlite::Result<Vec<Column>> {
    conn.prepare("SELECT name, upper(type), pk > 0 FROM pragma_table_info(?1) ORDER BY cid")?
        .query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

/// Whether the table exists (it has `found` columns), and `config_invalid` when it exists with
/// another shape.
pub(super) fn check_shape(name: &str, found: &[Column]) -> Result<bool> {
    if found.is_empty() {
        return Ok(false);
    }
    let want: Vec<Column> = COLUMNS.iter().map(|&(n, t, pk)| (n.into(), t.into(), pk)).collect();
    if found != want {
        let show = |cols: &[Column]| {
            cols.iter()
                .map(|(n, t, pk)| format!("{n} {t}{}", if *pk { " PRIMARY KEY" } else { "" }))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Error::config(
            "table",
            &format!("{name:?} exists with another shape: ({}); this store needs ({})", show(found), show(&want)),
        ));
    }
    Ok(true)
}

/// A column as `pragma_table_info` lists it: name, upper-cased type, part of the primary key.
pub(super) type Column = (String, String, bool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_plain_identifiers() {
        for ok in ["throttlekit", "_t", "T_1", &"x".repeat(63)] {
            check_table_name(ok).unwrap();
        }
        for bad in ["", "1t", "t-1", "t;drop", "t t", "\"t\"", "sqlite_x", "SQLITE_master", &"x".repeat(64), "é"] {
            assert_eq!(check_table_name(bad).unwrap_err().code(), crate::ErrorCode::ConfigInvalid, "{bad:?}");
        }
    }
}
