// Command shutdownchild is the Go child of the shutdown-hygiene check (tests/shutdown.sh): it
// uses a Redis store through the C ABI, closes the limiter and the store, says "closed", and
// returns from main when told to.
package main

import (
	"bufio"
	"fmt"
	"os"

	throttlekit "example.invalid/throttlekit/go"
)

func main() {
	store, err := throttlekit.ConnectRedis(os.Getenv("THROTTLEKIT_REDIS_URL"), throttlekit.RedisOptions{})
	if err != nil {
		panic(err)
	}
	s, _ := throttlekit.GCRA(100, 1000, 0)
	l, err := throttlekit.NewLimiter(s, &throttlekit.Options{Store: store, Prefix: "shutdown"})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := l.Check(fmt.Sprintf("k%d", i), 1); err != nil {
			panic(err)
		}
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("working")
	in.ReadString('\n')
	// Close releases each handle; the store goes with the last one (the limiter's).
	l.Close()
	store.Close()
	s.Close()
	fmt.Println("closed")
	in.ReadString('\n')
}
