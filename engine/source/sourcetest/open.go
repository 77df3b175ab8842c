package sourcetest

import (
	"testing"

	"github.com/cueop/cueop/engine/source"
)

// Open makes the source of ref with opts (its Refs parsed from ref; a
// cache directory of the test's when opts names none), failing the test on
// error. It does not start it.
func Open(t testing.TB, ref string, opts source.Options) *source.Source {
	t.Helper()
	refs, err := source.ParseRefs(ref)
	if err != nil {
		t.Fatal(err)
	}
	opts.Refs = refs
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	s, err := source.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
