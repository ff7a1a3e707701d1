package throttlekit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// replaySqlite replays every vectors file on one store per file over the SQLite file at path
// (the runner resets every key a suite touched after it, as on Redis; no sweep, so expiry
// follows only each op's now).
func replaySqlite(t *testing.T, label, path string) {
	replayEach(t, label, func() (*Store, error) { return OpenSqlite(path, SqliteOptions{NoSweep: true}) })
}

func TestConformanceSqlite(t *testing.T) {
	replaySqlite(t, "sqlite", filepath.Join(t.TempDir(), "limits.db"))
}

func TestSqliteBadInputIsCoded(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, []byte(strings.Repeat("not a database, just text. ", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		opts       SqliteOptions
		want       string // a piece of the message
	}{
		{"a directory as path", dir, SqliteOptions{}, dir},
		{"a path in a missing directory", filepath.Join(dir, "missing", "x.db"), SqliteOptions{}, "missing"},
		{"a file that is not a database", corrupt, SqliteOptions{}, "corrupt.db"},
		{"a bad table name", filepath.Join(dir, "ok.db"), SqliteOptions{Table: "Bad-Name"}, "table"},
		{"an unknown synchronous number", filepath.Join(dir, "ok.db"), SqliteOptions{Synchronous: 7}, "synchronous"},
		{"a missing table with NoMigrate", filepath.Join(dir, "fresh.db"), SqliteOptions{NoMigrate: true}, "throttlekit"},
	} {
		_, err := OpenSqlite(c.path, c.opts)
		if !errors.Is(err, ErrConfigInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrConfigInvalid naming %q", c.name, err, c.want)
		}
	}
}

// TestSqliteTwoProcessesShareOneLimit runs two OS processes (this test binary again) checking
// one key of limit K on one file concurrently: together they admit exactly K.
func TestSqliteTwoProcessesShareOneLimit(t *testing.T) {
	const limit, tries = 25, 40
	if path := os.Getenv("TK_SQLITE_CHILD_PATH"); path != "" {
		store, err := OpenSqlite(path, SqliteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gcra, _ := GCRA(limit, 86_400_000, 0)
		l, err := NewLimiter(gcra, &Options{Store: store, Prefix: "two"})
		if err != nil {
			t.Fatal(err)
		}
		admitted := 0
		for i := 0; i < tries; i++ {
			d, err := l.Check("shared", 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				admitted++
			}
		}
		fmt.Printf("ADMITTED %d\n", admitted)
		return
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	cmds := make([]*exec.Cmd, 2)
	outs := make([]strings.Builder, 2)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run", "^TestSqliteTwoProcessesShareOneLimit$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), "TK_SQLITE_CHILD_PATH="+path)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i].String())
		}
		out := outs[i].String()
		j := strings.Index(out, "ADMITTED ")
		if j < 0 {
			t.Fatalf("child %d printed no count: %s", i, out)
		}
		var n int
		fmt.Sscan(out[j+9:], &n)
		total += n
	}
	if total != limit {
		t.Fatalf("two processes admitted %d on a limit of %d", total, limit)
	}
}

// TestSqliteDocsShowTestedCode: docs/sqlite.md shows the Go and C constructors verbatim, as
// ExampleOpenSqlite and the C unit test run them (between their "docs/sqlite.md" markers).
func TestSqliteDocsShowTestedCode(t *testing.T) {
	docsShowTestedCode(t, "docs/sqlite.md", "sqlite_example_test.go", "../tests/test_throttlekit.c")
}

// TestPostgresDocsShowTestedCode: docs/postgres.md shows the Go and C examples verbatim, as
// TestPostgresDocsExample and the C Postgres test run them.
func TestPostgresDocsShowTestedCode(t *testing.T) {
	docsShowTestedCode(t, "docs/postgres.md", "postgres_docs_test.go", "../tests/test_postgres.c")
}

// docsShowTestedCode fails unless the repository's doc shows, as a Go block and a C block, the
// lines between the "// DOC begins" and "// DOC ends" markers of goFile and cFile verbatim
// (less the code's indent).
func docsShowTestedCode(t *testing.T, doc, goFile, cFile string) {
	t.Helper()
	text, err := os.ReadFile("../../" + doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, lang, indent string }{
		{goFile, "go", "\t"},
		{cFile, "c", "    "},
	} {
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		code := string(src)
		begins := "// " + doc + " begins\n"
		begin := strings.Index(code, begins)
		end := strings.Index(code, c.indent+"// "+doc+" ends")
		if begin < 0 || end < begin {
			t.Fatalf("%s: no %s markers", c.file, doc)
		}
		var lines []string
		for _, l := range strings.Split(code[begin+len(begins):end], "\n") {
			lines = append(lines, strings.TrimPrefix(l, c.indent))
		}
		block := "```" + c.lang + "\n" + strings.Join(lines, "\n") + "```"
		if !strings.Contains(string(text), block) {
			t.Errorf("%s does not show the code of %s verbatim:\n%s", doc, c.file, block)
		}
	}
}
