// Package testdocs checks that the docs show a package's quick start verbatim: the code between
// `// quick start begins` and `// quick start ends` in its example_test.go, which `go test` runs
// as an Example. tkhttp and tkgin use it.
package testdocs

import (
	"os"
	"strings"
	"testing"
)

// quickStart is the code between the markers in example_test.go, unindented one tab.
func quickStart(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	begin := strings.Index(text, "// quick start begins\n")
	end := strings.Index(text, "\t// quick start ends")
	if begin < 0 || end < begin {
		t.Fatal("quick start markers not found")
	}
	var lines []string
	for _, l := range strings.Split(text[begin+len("// quick start begins\n"):end], "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	return strings.Join(lines, "\n")
}

// ShowQuickStart fails the test unless every doc (a path relative to the package's folder)
// shows the quick start as a ```go block, verbatim.
func ShowQuickStart(t *testing.T, docs ...string) {
	t.Helper()
	code := quickStart(t)
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), "```go\n"+code+"```") {
			t.Errorf("%s does not show the quick start of example_test.go verbatim:\n%s", doc, code)
		}
	}
}
