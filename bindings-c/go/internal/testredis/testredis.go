// Package testredis starts a private redis-server for the Go middleware tests (tkhttp's and
// tkgin's) through the repository's tests/redis-server.sh, which picks a free loopback port and
// checks that the PID answering is the server's, and kills it by PID.
package testredis

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script finds tests/redis-server.sh above the test's working directory (its package's folder).
func script(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		path := filepath.Join(dir, "tests", "redis-server.sh")
		if _, err := os.Stat(path); err == nil {
			return path
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("tests/redis-server.sh not found above the test's folder")
		}
		dir = parent
	}
}

// Start starts a redis-server and returns its URL and PID; the server is killed when the test
// ends. Without redis-server installed the test is skipped (bindings-c/test.sh installs it).
func Start(t *testing.T) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (bindings-c/test.sh installs it)")
	}
	pidfile := filepath.Join(t.TempDir(), "redis.pid")
	out, err := exec.Command(script(t), "start", pidfile).Output()
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	raw, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return strings.TrimSpace(string(out)), pid
}

// Kill kills the server by PID and waits until it is gone.
func Kill(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}
