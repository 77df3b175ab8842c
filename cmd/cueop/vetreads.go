package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cueop/cueop/engine/template"
)

// explainReads says what of each live child a kind's template reads: the
// only part of it a render converts into CUE, and where it falls back to
// whole objects.
func explainReads(w io.Writer, k *template.Kind) {
	if k.Reads == nil {
		return
	}
	paths := k.Reads.Observed.Paths()
	switch {
	case k.Reads.Observed.All:
		fmt.Fprintf(w, "     observed     whole objects of every child\n")
	case len(paths) == 0:
		fmt.Fprintf(w, "     observed     no field (child ids only)\n")
	default:
		fmt.Fprintf(w, "     observed     %s\n", strings.Join(readable(paths), ", "))
	}
	if p := k.Reads.Parent.Paths(); len(p) > 0 {
		fmt.Fprintf(w, "     parent       %s\n", strings.Join(p, ", "))
	}
	for _, f := range k.Reads.Fallbacks {
		fmt.Fprintf(w, "     whole object %s\n", f)
	}
}

// readable writes the any-child id as [*]: pod-0.status, [*].status.
func readable(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		id, rest, _ := strings.Cut(p, ".")
		if id == template.AnyID {
			id = "[*]"
		}
		if rest == "" {
			out[i] = id + " (whole object)"
		} else {
			out[i] = id + "." + rest
		}
	}
	return out
}
