package throttlekit

// #include <stdbool.h>
// #include <stdint.h>
// #include <stdlib.h>
// #include <throttlekit.h>
import "C"

// PostgresOptions configures ConnectPostgres and MigratePostgres: core's PostgresOptions
// (docs/postgres.md, "Options"), one field each, durations in ms as in RedisOptions. The zero
// value is core's defaults, so the two options that default to on are spelled as their
// negation (NoMigrate, NoSweep). Every check is core's: a bad value is ErrConfigInvalid naming
// the option.
type PostgresOptions struct {
	// Table holds the limits: "name" or "schema.name", lowercase letters, digits and _ (empty:
	// "throttlekit").
	Table string
	// NoMigrate leaves a missing table and its functions uncreated: connecting to a missing or
	// misshapen table is then ErrConfigInvalid, and MigratePostgres is the deploy step that
	// creates it.
	NoMigrate bool
	// Unlogged creates the table UNLOGGED (no WAL: faster writes; a server crash empties it and
	// replicas never see it). Only when the table is created here.
	Unlogged bool
	// SynchronousCommitOff sets synchronous_commit = off on the store's connections: a server
	// crash can lose the last few hundred ms of charges.
	SynchronousCommitOff bool
	// PoolSize is the number of connections kept, each pipelining any number of calls (0: 4;
	// at most 1024).
	PoolSize uint32
	// TimeoutMs bounds every call (0: 1000 ms); past it the call is ErrStoreUnavailable and the
	// limiter's fail policy decides. A call that timed out is never resent (it may have committed).
	TimeoutMs uint64
	// ConnectTimeoutMs bounds each connection (0: 3000 ms); connecting the pool may take twice
	// ConnectTimeoutMs + TimeoutMs.
	ConnectTimeoutMs uint64
	// SweepIntervalMs is how often the sweeper deletes expired rows (0: 60000 ms).
	SweepIntervalMs uint64
	// NoSweep runs no sweeper (SweepIntervalMs is then ignored): an expired row stays until its
	// key is next touched; expiry is judged on read either way.
	NoSweep bool
	// SweepBatch is how many rows one sweep deletes at most (0: 1000).
	SweepBatch uint64
	// SweepGraceMs is how long past its deadline, by the server's clock, a row stays before the
	// sweeper may delete it (0: 60000 ms): room for callers whose clocks run behind the server's.
	SweepGraceMs uint64
	// ServerClock makes the limiters, multi limiters and shapers built on the store read time
	// from Postgres (clock_timestamp(), after the row lock) instead of their clock, and their
	// ...At calls ignore now: the clock for a fleet on windowed strategies. A limiter's fail
	// policy is its own (Options.FailPolicy), not the store's.
	ServerClock bool
}

// withPostgresOptions calls f with opts as a tk_postgres_options for url, freed after.
func withPostgresOptions(url string, opts PostgresOptions, f func(*C.tk_postgres_options) C.tk_result) error {
	var o C.tk_postgres_options
	o.url = cString(url)
	o.table = optString(opts.Table)
	defer free(o.url)
	defer free(o.table)
	o.no_migrate = C.bool(opts.NoMigrate)
	o.unlogged = C.bool(opts.Unlogged)
	o.synchronous_commit_off = C.bool(opts.SynchronousCommitOff)
	o.pool_size = C.uint32_t(opts.PoolSize)
	o.timeout_ms = C.uint64_t(opts.TimeoutMs)
	o.connect_timeout_ms = C.uint64_t(opts.ConnectTimeoutMs)
	o.sweep_interval_ms = C.uint64_t(opts.SweepIntervalMs)
	o.no_sweep = C.bool(opts.NoSweep)
	o.sweep_batch = C.uint64_t(opts.SweepBatch)
	o.sweep_grace_ms = C.uint64_t(opts.SweepGraceMs)
	o.server_clock = C.bool(opts.ServerClock)
	return call(func() C.tk_result { return f(&o) })
}

// ConnectPostgres connects to Postgres at url ("postgres://user:password@host:port/db", or
// libpq's key-value form; sslmode=require for TLS) and fills the pool, creating the table and
// its functions when missing (unless NoMigrate). An unreachable server, a refused login or a
// connection past ConnectTimeoutMs is ErrStoreUnavailable; a bad option, or with NoMigrate a
// missing table, ErrConfigInvalid.
func ConnectPostgres(url string, opts PostgresOptions) (*Store, error) {
	var p *C.tk_store
	err := withPostgresOptions(url, opts, func(o *C.tk_postgres_options) C.tk_result {
		return C.tk_store_postgres_connect_with(o, &p)
	})
	if err != nil {
		return nil, err
	}
	return newStore(p), nil
}

// MigratePostgres creates (or brings up to date) the table and functions opts name at url
// (Table, Unlogged and the timeouts count; NoMigrate and the sweeper's fields do not), then
// disconnects: the deploy step for stores connected with NoMigrate. Errors as ConnectPostgres's.
func MigratePostgres(url string, opts PostgresOptions) error {
	return withPostgresOptions(url, opts, func(o *C.tk_postgres_options) C.tk_result { return C.tk_postgres_migrate(o) })
}
