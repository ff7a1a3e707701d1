// Command nethttp is the go-nethttp HTTP example (examples/http/run.sh go-nethttp PORT):
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkhttp"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: nethttp PORT")
	}
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}

	strategy, err := throttlekit.GCRA(5, 60_000, 5)
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := throttlekit.NewLimiter(strategy, nil)
	if err != nil {
		log.Fatal(err)
	}
	limit, err := tkhttp.Limit(limiter,
		tkhttp.WithHeaderOptions(tkhttp.HeaderOptions{Family: tkhttp.FamilyDraft10, PolicyName: "default"}),
		tkhttp.WithSkip(func(r *http.Request) bool { return r.URL.Path == "/healthz" }))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/limited", ok)

	listener, err := net.Listen("tcp", net.JoinHostPort(host, os.Args[1]))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("go-nethttp listening on http://%s\n", listener.Addr())
	log.Fatal(http.Serve(listener, limit(mux)))
}
