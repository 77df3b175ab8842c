package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// vetGolden compares every golden case under dir with what the templates
// render, as `cueop test` does, and says how many match. A case without
// expected sections (only rendered and checked by vetCases) is counted
// apart; `cueop test` fails it.
func vetGolden(out io.Writer, set *template.Set, dir string, opts render.Options) error {
	results, err := golden.Run(set, dir, false, opts)
	if err != nil {
		return err
	}
	var errs []error
	unexpected := 0
	for _, r := range results {
		switch {
		case errors.Is(r.Err, golden.ErrNoExpected):
			unexpected++
		case r.Err != nil:
			errs = append(errs, r.Err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d golden cases differ from what the templates render (cueop test --update rewrites them; review the diff):\n%w",
			len(errs), len(results), errors.Join(errs...))
	}
	fmt.Fprintf(out, "ok   %d golden cases in %s match their expected sections", len(results)-unexpected, dir)
	if unexpected > 0 {
		fmt.Fprintf(out, " (%d without any, rendered only)", unexpected)
	}
	fmt.Fprintln(out)
	return nil
}
