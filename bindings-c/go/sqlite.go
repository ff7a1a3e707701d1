package throttlekit

// #include <stdbool.h>
// #include <stdint.h>
// #include <stdlib.h>
// #include <throttlekit.h>
import "C"

// SqliteSynchronous says how a SQLite store's commits reach the disk (docs/sqlite.md, "Durability").
type SqliteSynchronous uint32

const (
	// SqliteNormal syncs no commit: a commit survives the process crashing, not a power loss
	// (the default).
	SqliteNormal SqliteSynchronous = C.TK_SQLITE_SYNCHRONOUS_NORMAL
	// SqliteFull syncs the log at every commit: a commit survives a power loss, and each
	// decision waits for the disk.
	SqliteFull SqliteSynchronous = C.TK_SQLITE_SYNCHRONOUS_FULL
)

// SqliteOptions configures OpenSqlite: core's SqliteOptions (docs/sqlite.md), one field each.
// The zero value is core's defaults; every check is core's (a bad value is ErrConfigInvalid
// naming the option).
type SqliteOptions struct {
	// Table holds the limits (empty: "throttlekit"): a letter or _, then letters, digits or _.
	Table string
	// BusyTimeoutMs is how long a call waits for another process's write lock before
	// ErrStoreUnavailable and the limiter's fail policy (0: 5000 ms).
	BusyTimeoutMs uint64
	// Synchronous: SqliteNormal (default) or SqliteFull.
	Synchronous SqliteSynchronous
	// NoMigrate refuses a missing table with ErrConfigInvalid instead of creating it (schemas
	// managed by migrations).
	NoMigrate bool
	// MaxKeyLength is the longest full key ("prefix:key") in bytes (0: 256).
	MaxKeyLength uint
	// NoSweep leaves expired rows until their key is next touched, so expiry follows nothing
	// but the callers' clock (conformance replays).
	NoSweep bool
}

// OpenSqlite opens (creating if missing) the SQLite file at path as a store: every process of
// this machine that opens the same file and table shares each limit exactly, each decision one
// transaction under the file's write lock. A path that cannot be opened (a missing directory,
// a directory, no permission), a read-only file, a file that is not a database or a table of
// another shape is ErrConfigInvalid; the lock held past BusyTimeoutMs is ErrStoreUnavailable.
func OpenSqlite(path string, opts SqliteOptions) (*Store, error) {
	p, table := cString(path), optString(opts.Table)
	defer free(p)
	defer free(table)
	o := C.tk_sqlite_options{
		table:           table,
		busy_timeout_ms: C.uint64_t(opts.BusyTimeoutMs),
		synchronous:     C.uint32_t(opts.Synchronous),
		no_migrate:      C.bool(opts.NoMigrate),
		max_key_length:  C.size_t(opts.MaxKeyLength),
		no_sweep:        C.bool(opts.NoSweep),
	}
	var s *C.tk_store
	if err := call(func() C.tk_result { return C.tk_store_sqlite_open(p, &o, &s) }); err != nil {
		return nil, err
	}
	return newStore(s), nil
}
