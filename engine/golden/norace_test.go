//go:build !race

package golden_test

const raceFactor = 1
