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
	"time"
)

// The adaptive vectors (conformance-vectors/adaptive, "format": "throttlekit-adaptive/1"),
// decoded strictly.
type adaptiveFile struct {
	Format  string         `json:"format"`
	Comment string         `json:"comment"`
	Cases   []adaptiveCase `json:"cases"`
}

type adaptiveCase struct {
	ID          string          `json:"id"`
	Comment     string          `json:"comment"`
	Config      json.RawMessage `json:"config"`
	ExpectError string          `json:"expectError"`
	Events      []adaptiveEvent `json:"events"`
}

type adaptiveEvent struct {
	Op          string          `json:"op"`
	Permit      string          `json:"permit"`
	Partition   string          `json:"partition"`
	Outcome     string          `json:"outcome"`
	RTTUs       *int64          `json:"rttUs"`
	Us          uint64          `json:"us"`
	Expect      *adaptiveExpect `json:"expect"`
	ExpectError string          `json:"expectError"`
}

type adaptiveExpect struct {
	Granted  *bool  `json:"granted"`
	Released *bool  `json:"released"`
	Limit    uint32 `json:"limit"`
	Inflight uint32 `json:"inflight"`
}

// adaptiveGot is what an event produced: the state, or an error code.
type adaptiveGot struct {
	expect adaptiveExpect
	code   Code
}

func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Code(err.Error())
}

func runAdaptiveEvent(l *AdaptiveLimiter, held map[string]*Permit, e adaptiveEvent) adaptiveGot {
	state := func(err error) adaptiveGot {
		if err != nil {
			return adaptiveGot{code: codeOf(err)}
		}
		return adaptiveGot{expect: adaptiveExpect{Limit: l.Limit(), Inflight: l.Inflight()}}
	}
	switch e.Op {
	case "advance":
		return state(l.AdvanceVirtual(time.Duration(e.Us) * time.Microsecond))
	case "acquire":
		p, _, err := l.TryAcquire(e.Partition)
		if p != nil {
			if old := held[e.Permit]; old != nil {
				old.free() // a name reused: the old permit leaks, as in Rust
			}
			held[e.Permit] = p
		}
		g := state(err)
		if err == nil {
			granted := p != nil
			g.expect.Granted = &granted
		}
		return g
	case "drop":
		if p := held[e.Permit]; p != nil {
			p.free() // dropped without a release: a leak
			delete(held, e.Permit)
		}
		return state(nil)
	case "release":
		p := held[e.Permit]
		if p == nil {
			return adaptiveGot{code: CodeConfigInvalid}
		}
		outcome, err := ParseOutcome(e.Outcome)
		var released bool
		if err == nil && e.RTTUs != nil {
			released, err = p.ReleaseRTT(outcome, time.Duration(*e.RTTUs)*time.Microsecond)
		} else if err == nil {
			released, err = p.Release(outcome)
		}
		g := state(err)
		if err == nil {
			g.expect.Released = &released
		}
		return g
	}
	panic("unknown adaptive op " + e.Op)
}

func TestAdaptiveConformance(t *testing.T) {
	dir := os.Getenv("TK_VECTORS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "conformance-vectors")
	}
	files, err := filepath.Glob(filepath.Join(dir, "adaptive", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no adaptive vectors in %s/adaptive", dir)
	}
	passed, failed := 0, 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		var file adaptiveFile
		if err := dec.Decode(&file); err != nil || file.Format != "throttlekit-adaptive/1" {
			t.Fatalf("%s: not an adaptive vectors file: %v", f, err)
		}
		for _, c := range file.Cases {
			l, err := NewAdaptiveLimiterVirtual(string(c.Config))
			if err != nil || c.ExpectError != "" {
				if err != nil && string(codeOf(err)) == c.ExpectError {
					passed++
				} else {
					failed++
					t.Errorf("%s: expected error %q, got %v", c.ID, c.ExpectError, err)
				}
				if l != nil {
					l.Close()
				}
				continue
			}
			held := map[string]*Permit{}
			for i, e := range c.Events {
				got := runAdaptiveEvent(l, held, e)
				want := adaptiveGot{code: Code(e.ExpectError)}
				if e.Expect != nil {
					want.expect = *e.Expect
				}
				if reflect.DeepEqual(got, want) {
					passed++
				} else {
					failed++
					t.Errorf("%s event %d (%s): expected %+v, got %+v", c.ID, i, e.Op, want, got)
				}
			}
			for _, p := range held {
				p.free()
			}
			l.Close()
		}
	}
	fmt.Printf("go adaptive conformance: %d passed, %d failed\n", passed, failed)
}
