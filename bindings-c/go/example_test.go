package throttlekit_test

import (
	"errors"
	"fmt"

	throttlekit "example.invalid/throttlekit/go"
)

// A GCRA limiter: 10 requests a second, bursts of 2, checked at explicit times.
func Example() {
	strategy, err := throttlekit.GCRA(10, 1000, 2)
	if err != nil {
		panic(err)
	}
	defer strategy.Close()
	limiter, err := throttlekit.NewLimiter(strategy, &throttlekit.Options{Prefix: "api"})
	if err != nil {
		panic(err)
	}
	defer limiter.Close()

	for i := 0; i < 3; i++ {
		d, _ := limiter.CheckAt("user:42", 1, 1000)
		fmt.Printf("allowed=%v remaining=%d retryAfterMs=%d\n", d.Allowed, d.Remaining, d.RetryAfterMs)
	}
	_, err = limiter.CheckAt("user:42", 0, 1000)
	fmt.Println(errors.Is(err, throttlekit.ErrConfigInvalid), err.(*throttlekit.Error).Code)
	// Output:
	// allowed=true remaining=1 retryAfterMs=0
	// allowed=true remaining=0 retryAfterMs=0
	// allowed=false remaining=0 retryAfterMs=100
	// true config_invalid
}
