//go:build race

package main

// raceOn: the test binary runs under the race detector, whose shadow
// memory makes this process larger than the memory section's providers.
const raceOn = true
