module example.invalid/throttlekit/bench/gohttp

go 1.19

require (
	example.invalid/throttlekit/go v0.0.0
	golang.org/x/time v0.3.0
)

// No Go module proxy is reachable here (nor in CI): throttlekit from this tree, and
// golang.org/x/time/rate from Debian's golang-golang-x-time-dev (bench/go-http/run.sh installs it).
replace example.invalid/throttlekit/go => ../../bindings-c/go

replace golang.org/x/time => /usr/share/gocode/src/golang.org/x/time
