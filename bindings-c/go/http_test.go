package throttlekit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The HTTP vectors (conformance-vectors/http/*.json, format throttlekit-http/1), decoded
// strictly and replayed through HTTPHeaders and HTTPClientKey.
type httpVectorFile struct {
	Format         string     `json:"format"`
	Description    string     `json:"description"`
	HeaderCases    []httpCase `json:"headerCases"`
	ClientKeyCases []httpCase `json:"clientKeyCases"`
}

type httpCase struct {
	ID          string          `json:"id"`
	Comment     string          `json:"comment"`
	Request     json.RawMessage `json:"request"`
	Expect      json.RawMessage `json:"expect"`
	ExpectError string          `json:"expectError"`
}

func (c httpCase) check(got interface{}, err error) (bool, string) {
	if c.ExpectError != "" {
		var e *Error
		if errors.As(err, &e) && string(e.Code) == c.ExpectError {
			return true, ""
		}
		return false, fmt.Sprintf("expected error %s, got %v, %v", c.ExpectError, got, err)
	}
	if err != nil {
		return false, fmt.Sprintf("expected %s, got error %v", c.Expect, err)
	}
	var want interface{}
	if e := json.Unmarshal(c.Expect, &want); e != nil {
		return false, e.Error()
	}
	gotJSON, _ := json.Marshal(got)
	var gotValue interface{}
	_ = json.Unmarshal(gotJSON, &gotValue)
	if reflect.DeepEqual(want, gotValue) {
		return true, ""
	}
	return false, fmt.Sprintf("expected %s, got %s", c.Expect, gotJSON)
}

func TestHTTPConformance(t *testing.T) {
	dir := os.Getenv("TK_VECTORS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "conformance-vectors")
	}
	files, err := filepath.Glob(filepath.Join(dir, "http", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no HTTP vectors in %s/http", dir)
	}
	passed, failed := 0, 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		var file httpVectorFile
		if err := dec.Decode(&file); err != nil || file.Format != "throttlekit-http/1" {
			t.Fatalf("%s: not an HTTP vectors file: %v", f, err)
		}
		replay := func(cases []httpCase, headers bool) {
			for _, c := range cases {
				var got interface{}
				var err error
				if headers {
					var lines []HeaderLine
					lines, err = HTTPHeaders(string(c.Request))
					pairs := make([][2]string, len(lines))
					for i, l := range lines {
						pairs[i] = [2]string{l.Name, l.Value}
					}
					got = pairs
				} else {
					got, err = HTTPClientKey(string(c.Request))
				}
				if ok, why := c.check(got, err); ok {
					passed++
				} else {
					failed++
					t.Errorf("%s %s: %s", filepath.Base(f), c.ID, why)
				}
			}
		}
		replay(file.HeaderCases, true)
		replay(file.ClientKeyCases, false)
	}
	fmt.Printf("go http conformance: %d passed, %d failed\n", passed, failed)
}

func TestHTTPErrorsAreTyped(t *testing.T) {
	_, err := HTTPHeaders(`{"nowMs": 0, "limits": []}`)
	if !errors.Is(err, ErrConfigInvalid) {
		t.Fatalf("want config_invalid, got %v", err)
	}
	key, err := HTTPClientKey(`{"peer": "::ffff:192.0.2.44"}`)
	if err != nil || key != "192.0.2.44" {
		t.Fatalf("got %q, %v", key, err)
	}
}
