package main

import (
	"strings"
	"testing"
)

// TestIsDigest: the console leaves out a status value that is a digest,
// status.inputsDigest in both its forms (engine/reconcile/resync.go) or a
// sha256: reference, and keeps the others.
func TestIsDigest(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	for v, want := range map[any]bool{
		hex: true, "default:" + hex: true, "sha256:" + hex: true,
		"default:": false, "Running": false, hex[:31]: false, int64(3): false, "default:" + hex + "x": false,
	} {
		if got := isDigest(v); got != want {
			t.Errorf("isDigest(%v) = %v, want %v", v, got, want)
		}
	}
}
