package throttlekit_test

import (
	"fmt"
	"os"
	"path/filepath"

	throttlekit "example.invalid/throttlekit/go"
)

// A limiter on a SQLite file: every process of the machine that opens the file shares the limit.
// The code between the markers is what docs/sqlite.md shows (TestSqliteDocsShowTestedCode).
func ExampleOpenSqlite() {
	dir, err := os.MkdirTemp("", "tk-go-sqlite-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "limits.db")
	// docs/sqlite.md begins
	store, err := throttlekit.OpenSqlite(path, throttlekit.SqliteOptions{BusyTimeoutMs: 2000})
	if err != nil {
		panic(err) // a *throttlekit.Error: errors.Is(err, throttlekit.ErrConfigInvalid) for a bad path
	}
	defer store.Close()
	strategy, _ := throttlekit.GCRA(2, 60_000, 0) // 2 a minute
	limiter, _ := throttlekit.NewLimiter(strategy, &throttlekit.Options{Store: store, Prefix: "api"})
	d, _ := limiter.Check("user:42", 1)
	// docs/sqlite.md ends
	defer strategy.Close()
	defer limiter.Close()
	d2, _ := limiter.Check("user:42", 1)
	d3, _ := limiter.Check("user:42", 1)
	fmt.Println(d.Allowed, d2.Allowed, d3.Allowed)
	// Output: true true false
}
