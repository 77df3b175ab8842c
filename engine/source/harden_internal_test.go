package source

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/template"
)

// deepArchive is an archive of n empty files, each depth path elements
// deep below a directory of its own: e0/d/d/.../f.cue.
func deepArchive(t testing.TB, n, depth int) (*zip.Reader, int) {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	names := 0
	for i := range n {
		name := fmt.Sprintf("e%d/%sf.cue", i, strings.Repeat("d/", max(depth-2, 0)))
		names += len(name)
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return zr, names
}

func testCache() *cache {
	return &cache{limits: template.Limits{}.WithDefaults(), maxFiles: DefaultMaxModuleFiles}
}

// TestCheckEntriesLinear: the check of an archive's names does work linear
// in their bytes (twice the entries, about twice the work, and a few times
// the bytes at most), where it walked every parent of every name, each
// from the name's start; an entry deeper than MaxEntryDepth or longer than
// MaxEntryName is refused naming it, after work of its own name alone.
func TestCheckEntriesLinear(t *testing.T) {
	c := testCache()
	ctx := context.Background()
	var works [2]int
	for i, n := range []int{1000, 2000} {
		zr, names := deepArchive(t, n, MaxEntryDepth)
		work, err := c.checkNames(ctx, zr)
		if err != nil {
			t.Fatalf("%d entries %d deep: %v", n, MaxEntryDepth, err)
		}
		if work > 4*names {
			t.Errorf("%d entries of %d bytes in all: work %d, more than 4 times their bytes", n, names, work)
		}
		works[i] = work
	}
	if r := float64(works[1]) / float64(works[0]); r < 1.8 || r > 2.2 {
		t.Errorf("work %d for 1000 entries, %d for 2000: ratio %.2f, want about 2", works[0], works[1], r)
	}
	// Twice as deep, about twice the work (walking every parent from the
	// name's start, four times).
	half, _ := deepArchive(t, 1000, MaxEntryDepth/2)
	if work, err := c.checkNames(ctx, half); err != nil {
		t.Fatal(err)
	} else if r := float64(works[0]) / float64(work); r < 1.7 || r > 2.2 {
		t.Errorf("work %d for 1000 entries %d deep, %d for %d deep: ratio %.2f, want about 2", work, MaxEntryDepth/2, works[0], MaxEntryDepth, r)
	}

	for _, tc := range []struct {
		name      string
		n, depth  int
		want      string
		wantEntry string
	}{
		{"one-too-deep", 3, MaxEntryDepth + 1, fmt.Sprintf("65 path elements deep, more than the %d a module's file may be: refused", MaxEntryDepth), `entry "e0/d/d/`},
		// The shape of the issue: 120 entries 32,000 directories deep.
		{"issue-shape", 120, 32000, fmt.Sprintf("a name of 64004 bytes, more than the %d a module's file may have: refused", MaxEntryName), `entry "e0/d/d/`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zr, _ := deepArchive(t, tc.n, tc.depth)
			start := time.Now()
			work, err := c.checkNames(ctx, zr)
			t.Logf("%d entries %d deep: checked in %s, work %d: %v", tc.n, tc.depth, time.Since(start), work, err)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.wantEntry) {
				t.Fatalf("err = %v, want %q naming the entry", err, tc.want)
			}
			if len(err.Error()) > 600 {
				t.Errorf("error of %d bytes: the entry's name is not shortened", len(err.Error()))
			}
			if work > 2*len(zr.File[0].Name) {
				t.Errorf("work %d, more than twice the first entry's name (%d bytes)", work, len(zr.File[0].Name))
			}
		})
	}
}

// TestCheckEntriesCancelled: the check stops when its context is done,
// naming where.
func TestCheckEntriesCancelled(t *testing.T) {
	zr, _ := deepArchive(t, 100, 8)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	work, err := testCache().checkNames(ctx, zr)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errCheckStopped) || !strings.Contains(err.Error(), "checking its archive: stopped at entry 1 of 100") {
		t.Errorf("err = %v, want the check cancelled at its first entry", err)
	}
	if work != 0 {
		t.Errorf("work %d after the context was cancelled", work)
	}
}

// BenchmarkCheckEntries measures the check of the largest archive of names
// it accepts and of the shape (refused).
func BenchmarkCheckEntries(b *testing.B) {
	c := testCache()
	for _, s := range []struct{ n, depth int }{{DefaultMaxModuleFiles, MaxEntryDepth}, {120, 32000}} {
		zr, _ := deepArchive(b, s.n, s.depth)
		b.Run(fmt.Sprintf("%dx%d", s.n, s.depth), func(b *testing.B) {
			for b.Loop() {
				c.checkNames(context.Background(), zr)
			}
		})
	}
}

// TestCheckEntriesTimedOut: a check stopped by --registry-timeout says so,
// not that the registry did not answer.
func TestCheckEntriesTimedOut(t *testing.T) {
	zr, _ := deepArchive(t, 100, 8)
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	_, err := testCache().checkNames(ctx, zr)
	ref := Ref{Raw: "oci://r.example/example.com/evil@v0", Registry: "r.example"}
	got := timedOut(ctx, ref, 5*time.Second, err)
	if want := "module reference oci://r.example/example.com/evil@v0: its archive was not checked within 5s (--registry-timeout): checking its archive: stopped at entry 1 of 100: context deadline exceeded"; got == nil || got.Error() != want {
		t.Errorf("err = %v, want %q", got, want)
	}
}
