// Package templatetest compiles kinds for tests: the project's own, or one
// written from a map of files into a templates directory of the test module
// (internal/testkit).
package templatetest

import (
	"testing"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
)

// Load loads the templates of dir, failing the test on an error.
func Load(t testing.TB, dir string) *template.Set {
	t.Helper()
	set, err := template.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Shipped is the kind of group and kind of the project's templates.
func Shipped(t testing.TB, group, kind string) *template.Kind {
	t.Helper()
	return Lookup(t, Load(t, testkit.Shipped()), group, kind)
}

// Lookup is the kind of group and kind of set, failing the test if set has
// none.
func Lookup(t testing.TB, set *template.Set, group, kind string) *template.Kind {
	t.Helper()
	k := set.Lookup(group, kind)
	if k == nil {
		t.Fatalf("no kind %s.%s", kind, group)
	}
	return k
}

// Compile compiles a templates directory of the test module holding files
// (testkit.Templates) and returns its first kind.
func Compile(t testing.TB, files map[string]string) *template.Kind {
	t.Helper()
	k, err := TryCompile(t, files)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TryCompile is Compile that returns the load error.
func TryCompile(t testing.TB, files map[string]string) (*template.Kind, error) {
	t.Helper()
	set, err := template.Load(testkit.Templates(t, files))
	if err != nil {
		return nil, err
	}
	return set.Kinds[0], nil
}
