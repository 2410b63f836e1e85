package retry_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/tfisolate/tfisolate/internal/retry"
)

// A call throttled once is called twice; onRetry tells of the repeat
// before its wait.
func ExamplePolicy_Do() {
	p := retry.Policy{Max: 2, Patterns: []*regexp.Regexp{regexp.MustCompile(`429 Too Many Requests`)}}
	calls := 0
	err := p.Do(context.Background(), func(n int, err error, wait time.Duration) {
		fmt.Printf("retry %d of %d in %s: %v\n", n, p.Max, wait, err)
	}, func() error {
		calls++
		if calls == 1 {
			return errors.New("Error: 429 Too Many Requests")
		}
		return nil
	})
	fmt.Println(calls, err)
	// Output:
	// retry 1 of 2 in 0s: Error: 429 Too Many Requests
	// 2 <nil>
}
