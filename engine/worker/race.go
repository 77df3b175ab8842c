//go:build race

package worker

// raceEnabled is true in a -race build.
const raceEnabled = true
