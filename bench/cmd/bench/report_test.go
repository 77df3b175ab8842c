package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/bench/harness"
)

func TestWriteSectionKeepsOtherSections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	doc := "# Benchmarks\n\n## Local control plane\n\nkept\n\n" + sectionTitle + "\n\nold\n\n## Render (engine)\n\nalso kept\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSection(path, sectionTitle+"\n\nnew\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# Benchmarks\n\n## Local control plane\n\nkept\n\n" + sectionTitle + "\n\nnew\n\n## Render (engine)\n\nalso kept\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Absent: appended.
	if err := os.WriteFile(path, []byte("# B\n\n## Local control plane\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSection(path, sectionTitle+"\n\nnew\n"); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if want := "# B\n\n## Local control plane\n\nkept\n\n" + sectionTitle + "\n\nnew\n"; string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
BenchmarkRender/cueop/replicas=3-2         	    1128	   1090407 ns/op	  323840 B/op	    3846 allocs/op
BenchmarkRender/baseline/replicas=3-2      	   85009	     17240 ns/op	    9056 B/op	     115 allocs/op
BenchmarkRender/cueop/replicas=3-2         	    1000	   1000000 ns/op	  323840 B/op	    3846 allocs/op
PASS`
	res := parseGoBench(out)
	c := res["BenchmarkRender/cueop/replicas=3"]
	if c == nil || len(c.NsOp) != 2 || median(c.NsOp) != 1045203.5 || c.AllocsOp[0] != 3846 {
		t.Fatalf("cueop samples %+v", c)
	}
	if b := res["BenchmarkRender/baseline/replicas=3"]; b == nil || b.BOp[0] != 9056 {
		t.Fatalf("baseline samples %+v", b)
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[string]float64{"5.81s": 5.81, "580ms": 0.58, "2mins": 120, "0": 0} {
		if got := seconds(in); got != want {
			t.Errorf("seconds(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestResourceNames(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/pods/p":                                    "pods",
		"/api/v1/namespaces/ns/pods":                                      "pods",
		"/apis/cache.example.com/v1/namespaces/ns/redisclusters/r/status": "redisclusters/status",
		"/apis/events.k8s.io/v1/namespaces/ns/events":                     "events",
		"/api/v1/namespaces/ns":                                           "namespaces",
	} {
		if got := harness.Resource(path); !strings.EqualFold(got, want) {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

// TestStormFigures reads the summary line TestNoRetryStorm logs.
func TestStormFigures(t *testing.T) {
	out := []byte("=== RUN   TestNoRetryStorm\n    storm_test.go:81: 5m0s with 10 never-ready and 10 always-failing CRs: 86 requests (80 writes), limit 140; a retry every 3s would be 2000\n--- PASS: TestNoRetryStorm (312.4s)\n")
	m := stormLine.FindSubmatch(out)
	if m == nil {
		t.Fatal("no summary line found")
	}
	f := stormFigures.FindStringSubmatch(string(m[1]))
	if f == nil || f[1] != "86" || f[2] != "140" {
		t.Fatalf("figures %q, want 86 requests and limit 140", f)
	}
}
