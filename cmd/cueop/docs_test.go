package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestOperatingDocNamesEveryFlag fails when a flag of a command an
// operator or an author runs (every command but the hidden worker) is not
// in docs/operating.md, written `--name`: the flags come from the command
// tree itself, so a flag added without its line there fails here.
func TestOperatingDocNamesEveryFlag(t *testing.T) {
	page, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(page)
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			n++
			if !strings.Contains(doc, "`--"+f.Name+"`") && !strings.Contains(doc, "`--"+f.Name+" ") {
				t.Errorf("%s --%s is not in docs/operating.md (%s)", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	root := newRoot()
	walk(root)
	for _, want := range []string{"run", "diff", "manifests"} {
		if c, _, err := root.Find([]string{want}); err != nil || c == root {
			t.Errorf("no command %s in the tree: %v", want, err)
		}
	}
	if n < 50 {
		t.Fatalf("only %d flags found: the walk of the command tree needs updating", n)
	}
	t.Logf("%d flags, each in docs/operating.md", n)
}
