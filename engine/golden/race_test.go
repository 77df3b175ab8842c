//go:build race

package golden_test

// raceFactor scales CPU budgets under the race detector, which slows
// evaluation several times over.
const raceFactor = 10
