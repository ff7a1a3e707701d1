//! The Postgres store (cargo feature `postgres`; docs/postgres.md).
//!
//! Sans-IO like the Redis engine: [`call`] turns a transform into the parameters of one
//! statement and the returned row into the store's reply; [`schema`] holds the table, the SQL
//! functions and the statements as text (the common checks inline: `inline`); [`PostgresStore`] is the tokio-postgres driver;
//! [`session`] is one connection without I/O, for a binding that drives its own socket
//! (Node), with [`crate::Limiter::prepare_sql`] and [`crate::Limiter::finish_sql`] around it.

pub mod call;
pub mod inline;
mod options;
mod prepared;
pub mod schema;
mod scoped;
pub mod session;
mod store;
pub mod tls;

pub use options::PostgresOptions;
pub use scoped::conformance_stores;
pub use store::PostgresStore;
