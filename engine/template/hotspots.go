package template

import (
	"fmt"
	"sort"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
)

// maxHotspots is how many places an over-budget error points at.
const maxHotspots = 5

// Hotspots lists where the evaluation of a package can grow beyond the size
// of its input: its comprehensions, with how deeply each is nested, and its
// calls of list.Repeat and strings.Repeat. CUE cannot say what it
// was evaluating when an evaluation is abandoned, so these are the
// candidates an over-budget error names, most deeply nested first.
func Hotspots(inst *build.Instance) []string {
	type spot struct {
		pos   string
		depth int
		what  string
	}
	var spots []spot
	for _, f := range inst.Files {
		var depth int
		ast.Walk(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Comprehension:
				depth += loops(x)
				spots = append(spots, spot{ShortPos(x.Pos()), depth, fmt.Sprintf("comprehension (%d nested for)", depth)})
			case *ast.CallExpr:
				if name := callName(x); name != "" {
					spots = append(spots, spot{ShortPos(x.Pos()), depth, name})
				}
			}
			return true
		}, func(n ast.Node) {
			if x, ok := n.(*ast.Comprehension); ok {
				depth -= loops(x)
			}
		})
	}
	sort.SliceStable(spots, func(i, j int) bool { return spots[i].depth > spots[j].depth })
	var out []string
	for _, s := range spots {
		if len(out) == maxHotspots {
			break
		}
		out = append(out, s.pos+" "+s.what)
	}
	return out
}

// loops counts the for clauses of a comprehension (at least one, so that
// an if-only comprehension still counts as a level).
func loops(c *ast.Comprehension) int {
	n := 0
	for _, cl := range c.Clauses {
		if _, ok := cl.(*ast.ForClause); ok {
			n++
		}
	}
	return max(n, 1)
}

func callName(c *ast.CallExpr) string {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	id, ok := sel.Sel.(*ast.Ident)
	if !ok {
		return ""
	}
	name := pkg.Name + "." + id.Name
	switch name {
	case "list.Repeat", "strings.Repeat":
		return name
	}
	return ""
}

// HotspotHint formats hotspots for an over-budget error.
func HotspotHint(spots []string) string { return hotspotHint(spots) }

func hotspotHint(spots []string) string {
	if len(spots) == 0 {
		return ""
	}
	return "; where the evaluation can grow: " + strings.Join(spots, "; ")
}
