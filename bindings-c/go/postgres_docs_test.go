package throttlekit_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	throttlekit "example.invalid/throttlekit/go"
)

// The code between the markers is what docs/postgres.md shows (TestPostgresDocsShowTestedCode):
// the migrate step, then a store on the table it created.
func TestPostgresDocsExample(t *testing.T) {
	url := os.Getenv("TK_POSTGRES_URL")
	if url == "" {
		// Reason: needs a disposable Postgres; bindings-c/test.sh starts one and sets TK_POSTGRES_URL.
		t.Skip("TK_POSTGRES_URL is not set (bindings-c/test.sh sets it)")
	}
	table := fmt.Sprintf("tk_go_docs_%d", time.Now().UnixNano())
	// docs/postgres.md begins
	opts := throttlekit.PostgresOptions{Table: table, NoMigrate: true, PoolSize: 2, TimeoutMs: 5000}
	if err := throttlekit.MigratePostgres(url, opts); err != nil { // the deploy step
		t.Fatal(err) // a *throttlekit.Error: errors.Is(err, throttlekit.ErrConfigInvalid) names a bad option
	}
	store, err := throttlekit.ConnectPostgres(url, opts)
	// docs/postgres.md ends
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	strategy, _ := throttlekit.GCRA(1, 60_000, 0)
	defer strategy.Close()
	limiter, _ := throttlekit.NewLimiter(strategy, &throttlekit.Options{Store: store})
	defer limiter.Close()
	d1, _ := limiter.Check("user:42", 1)
	d2, _ := limiter.Check("user:42", 1)
	if !d1.Allowed || d2.Allowed {
		t.Fatalf("1 a minute on the migrated table: %v then %v, want allowed then denied", d1.Allowed, d2.Allowed)
	}
}
