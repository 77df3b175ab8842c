// Package update defines the -update flag of the golden tests. Every test
// package of cueop imports it, so that `go test ./... -update` is a flag
// every test binary accepts.
package update

import "flag"

// Golden is true when golden files are to be rewritten rather than compared.
var Golden = flag.Bool("update", false, "rewrite golden files from the current output")
