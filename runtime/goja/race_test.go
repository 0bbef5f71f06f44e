//go:build race

package goja

// raceEnabled: the race detector is on (its shadow memory is resident).
const raceEnabled = true
