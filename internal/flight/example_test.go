package flight_test

import (
	"context"
	"fmt"

	"github.com/tfisolate/tfisolate/internal/flight"
)

func ExampleGroup() {
	var g flight.Group[string] // remembers results: one run per key
	ctx := context.Background()
	for _, who := range []string{"unit-a", "unit-b"} {
		res, leader, err := g.Do(ctx, "module:vpc", who, func() (string, error) {
			return "fetched by " + who, nil
		})
		fmt.Println(who, res, leader, err)
	}
	// Output:
	// unit-a fetched by unit-a true <nil>
	// unit-b fetched by unit-a false <nil>
}
