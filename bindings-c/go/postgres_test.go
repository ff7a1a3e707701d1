package throttlekit

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// postgresURL is the disposable Postgres that bindings-c/test.sh starts.
func postgresURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("TK_POSTGRES_URL")
	if url == "" {
		// Reason: needs a disposable Postgres; bindings-c/test.sh starts one and sets TK_POSTGRES_URL.
		t.Skip("TK_POSTGRES_URL is not set (bindings-c/test.sh sets it)")
	}
	return url
}

// psql is the test server's one-line answer to sql (psql ships with the server).
func psql(t *testing.T, url, sql string) string {
	t.Helper()
	out, err := exec.Command("psql", url, "-Atqc", sql).Output()
	if err != nil {
		t.Fatalf("psql %q: %v", sql, err)
	}
	return strings.TrimSpace(string(out))
}

// freshTable names a table of this run (the suite's server outlives no run, but tests share it).
func freshTable(what string) string {
	return fmt.Sprintf("tk_go_%s_%d", what, time.Now().UnixNano())
}

// windowCheckAt runs one check of a 1-per-minute fixed window on store at now.
func windowCheckAt(t *testing.T, store *Store, key string, now int64) Decision {
	t.Helper()
	s, err := FixedWindow(1, 60_000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := NewLimiter(s, &Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := l.CheckAt(key, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func connectPostgres(t *testing.T, url string, opts PostgresOptions) *Store {
	t.Helper()
	s, err := ConnectPostgres(url, opts)
	if err != nil {
		t.Fatalf("ConnectPostgres(%+v): %v", opts, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgresUnloggedCreatesAnUnloggedTable(t *testing.T) {
	url := postgresURL(t)
	persistence := func(table string) string {
		return psql(t, url, fmt.Sprintf("SELECT relpersistence FROM pg_class WHERE relname = '%s'", table))
	}
	unlogged, logged := freshTable("unlogged"), freshTable("logged")
	s := connectPostgres(t, url, PostgresOptions{Table: unlogged, Unlogged: true, SynchronousCommitOff: true, PoolSize: 1, NoSweep: true})
	if !windowCheckAt(t, s, "k", 1000).Allowed {
		t.Fatal("the first check of a fresh table was denied")
	}
	connectPostgres(t, url, PostgresOptions{Table: logged, PoolSize: 1, NoSweep: true})
	if got := persistence(unlogged); got != "u" {
		t.Errorf("Unlogged: relpersistence %q, want u", got)
	}
	if got := persistence(logged); got != "p" {
		t.Errorf("the default: relpersistence %q, want p", got)
	}
}

func TestPostgresNoMigrateFailsUntilMigratePostgres(t *testing.T) {
	url := postgresURL(t)
	table := freshTable("migrate")
	opts := PostgresOptions{Table: table, NoMigrate: true, PoolSize: 1, NoSweep: true}
	_, err := ConnectPostgres(url, opts)
	var e *Error
	if !errors.Is(err, ErrConfigInvalid) || !errors.As(err, &e) || !strings.Contains(e.Message, table) {
		t.Fatalf("NoMigrate on a missing table: %v, want ErrConfigInvalid naming %s", err, table)
	}
	if err := MigratePostgres(url, opts); err != nil {
		t.Fatalf("MigratePostgres: %v", err)
	}
	if got := psql(t, url, fmt.Sprintf("SELECT count(*) FROM %s", table)); got != "0" {
		t.Fatalf("the migrated table holds %q rows, want 0", got)
	}
	s := connectPostgres(t, url, opts)
	if !windowCheckAt(t, s, "k", 1000).Allowed {
		t.Fatal("the first check on the migrated table was denied")
	}
}

func TestPostgresConnectTimeoutBoundsAServerThatNeverAnswers(t *testing.T) {
	// Listening, never accepting: the kernel completes the TCP handshake and the startup
	// message is never answered, so only the connect timeout ends the wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	url := fmt.Sprintf("postgres://u:p@%s/db?sslmode=disable", ln.Addr())
	opts := PostgresOptions{ConnectTimeoutMs: 200, TimeoutMs: 2000, PoolSize: 1}
	start := time.Now()
	_, err = ConnectPostgres(url, opts)
	took := time.Since(start)
	var e *Error
	if !errors.Is(err, ErrStoreUnavailable) || !errors.As(err, &e) || !strings.Contains(e.Message, "timed out after 200ms") {
		t.Fatalf("a silent server: %v, want ErrStoreUnavailable after the 200 ms connect timeout", err)
	}
	// The documented bound of a constructor: twice ConnectTimeoutMs + TimeoutMs.
	if bound := 2 * (200 + 2000) * time.Millisecond; took > bound {
		t.Fatalf("connecting took %v, past its bound %v", took, bound)
	}
	if err := MigratePostgres(url, opts); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("MigratePostgres on a silent server: %v, want ErrStoreUnavailable", err)
	}
}

func TestPostgresNoSweepLeavesExpiredRows(t *testing.T) {
	url := postgresURL(t)
	swept, kept := freshTable("swept"), freshTable("kept")
	// The same short interval and grace on both; only NoSweep differs.
	opts := PostgresOptions{PoolSize: 1, SweepIntervalMs: 50, SweepGraceMs: 1, SweepBatch: 100}
	opts.Table = swept
	sweeping := connectPostgres(t, url, opts)
	opts.Table, opts.NoSweep = kept, true
	idle := connectPostgres(t, url, opts)
	// A window of 1970 (the caller's clock): expired long ago by the server's.
	windowCheckAt(t, sweeping, "k", 1000)
	windowCheckAt(t, idle, "k", 1000)
	count := func(table string) string { return psql(t, url, "SELECT count(*) FROM "+table) }
	if got := count(kept); got != "1" {
		t.Fatalf("%s holds %s rows after one check, want 1", kept, got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for count(swept) != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper (every 50 ms) left %s's expired row for 30 s", swept)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Several more of the sweeper's intervals: NoSweep's row is still there.
	time.Sleep(500 * time.Millisecond)
	if got := count(kept); got != "1" {
		t.Fatalf("NoSweep: %s holds %s rows, want its expired row kept", kept, got)
	}
}

func TestPostgresServerClockIsTheLimitersDefault(t *testing.T) {
	url := postgresURL(t)
	key := freshTable("clock")
	server := connectPostgres(t, url, PostgresOptions{PoolSize: 1, NoSweep: true, ServerClock: true})
	// now = 1970 is ignored: the window ends a minute after the server's clock.
	if d := windowCheckAt(t, server, key, 1000); !d.Allowed || d.ResetAt < time.Now().UnixMilli()-60_000 {
		t.Fatalf("on the server's clock: %+v, want a window of now", d)
	}
	caller := connectPostgres(t, url, PostgresOptions{PoolSize: 1, NoSweep: true})
	if d := windowCheckAt(t, caller, key, 1000); !d.Allowed || d.ResetAt != 60_000 {
		t.Fatalf("on the caller's clock: %+v, want the window ending at 60000", d)
	}
}

func TestPostgresBadOptionsAreConfigInvalidNamingTheOption(t *testing.T) {
	// Checked before connecting: no server needed.
	const url = "postgres://u:p@127.0.0.1:1/db"
	for _, c := range []struct {
		url    string
		opts   PostgresOptions
		naming string
	}{
		{url, PostgresOptions{Table: "Bad-Name"}, "table"},
		{url, PostgresOptions{PoolSize: 5000}, "poolSize"},
		{url + "?sslmode=sometimes", PostgresOptions{}, "postgres.url"},
	} {
		_, err := ConnectPostgres(c.url, c.opts)
		var e *Error
		if !errors.Is(err, ErrConfigInvalid) || !errors.As(err, &e) || !strings.Contains(e.Message, c.naming) {
			t.Errorf("ConnectPostgres(%q, %+v): %v, want ErrConfigInvalid naming %s", c.url, c.opts, err, c.naming)
		}
		if err := MigratePostgres(c.url, c.opts); !errors.Is(err, ErrConfigInvalid) {
			t.Errorf("MigratePostgres(%q, %+v): %v, want ErrConfigInvalid", c.url, c.opts, err)
		}
	}
}
