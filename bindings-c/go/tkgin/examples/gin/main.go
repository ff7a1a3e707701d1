// Command gin is the go-gin HTTP example (examples/http/run.sh go-gin PORT): GET /healthz is
// never limited; GET /limited is limited by client IP with GCRA 5 per 60 s, burst 5, draft-10
// fields, policy name "default", no trusted proxies.
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	throttlekit "example.invalid/throttlekit/go"
	"example.invalid/throttlekit/go/tkgin"
	"example.invalid/throttlekit/go/tkhttp"
	"github.com/gin-gonic/gin"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: gin PORT")
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
	limit, err := tkgin.New(limiter,
		tkhttp.WithHeaderOptions(tkhttp.HeaderOptions{Family: tkhttp.FamilyDraft10, PolicyName: "default"}))
	if err != nil {
		log.Fatal(err)
	}

	gin.SetMode(gin.ReleaseMode)
	router := gin.New()
	ok := func(c *gin.Context) { c.String(http.StatusOK, "ok") }
	router.GET("/healthz", ok)
	router.GET("/limited", limit, ok)

	listener, err := net.Listen("tcp", net.JoinHostPort(host, os.Args[1]))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("go-gin listening on http://%s\n", listener.Addr())
	log.Fatal(http.Serve(listener, router))
}
