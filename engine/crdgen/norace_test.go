//go:build !race

package crdgen

const raceEnabled = false
