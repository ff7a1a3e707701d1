//! The Postgres store (cargo feature `postgres`; docs/postgres.md).
//!
//! Sans-IO like the Redis engine: [`call`] turns a transform into the parameters of one
//! statement and the returned row into the store's reply; [`schema`] holds the table, the SQL
//! functions and the statements as text (the common checks inline: `inline`); [`PostgresStore`] is the tokio-postgres driver.

pub mod call;
pub mod inline;
mod options;
pub mod schema;
mod scoped;
mod store;

pub use options::PostgresOptions;
pub use scoped::conformance_stores;
pub use store::PostgresStore;
