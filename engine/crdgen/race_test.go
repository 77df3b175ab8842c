//go:build race

package crdgen

// raceEnabled is set under the race detector, which makes the CEL
// evaluation of TestCELEquivalence about 15 times slower.
const raceEnabled = true
