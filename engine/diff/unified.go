package diff

import (
	"fmt"
	"strings"
)

// contextLines is how many unchanged lines surround a change in a hunk.
const contextLines = 3

// Unified is a unified diff of a and b (texts of lines), headed by the
// names from and to; "" when they are equal.
func Unified(from, to, a, b string) string {
	x, y := lines(a), lines(b)
	ops := editScript(x, y)
	var out strings.Builder
	for _, h := range hunks(ops) {
		if out.Len() == 0 {
			fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
		}
		writeHunk(&out, ops[h[0]:h[1]])
	}
	return out.String()
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// op is one line of the edit script: ' ', '-' or '+', with the line's
// number in a and in b (1-based, of the next line on the side it is not on).
type op struct {
	kind byte
	text string
	ai   int
	bi   int
}

// editScript is a shortest edit script from x to y by longest common
// subsequence (objects are small: quadratic is fine).
func editScript(x, y []string) []op {
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, op{' ', x[i], i + 1, j + 1})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', x[i], i + 1, j + 1})
			i++
		default:
			ops = append(ops, op{'+', y[j], i + 1, j + 1})
			j++
		}
	}
	return ops
}

// hunks are the [start, end) ranges of ops around changes, with context,
// merged when their context overlaps.
func hunks(ops []op) [][2]int {
	var out [][2]int
	for i, o := range ops {
		if o.kind == ' ' {
			continue
		}
		lo, hi := max(0, i-contextLines), min(len(ops), i+contextLines+1)
		if n := len(out); n > 0 && lo <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], hi)
			continue
		}
		out = append(out, [2]int{lo, hi})
	}
	return out
}

func writeHunk(out *strings.Builder, ops []op) {
	var na, nb int
	for _, o := range ops {
		if o.kind != '+' {
			na++
		}
		if o.kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", span(ops[0].ai, na), span(ops[0].bi, nb))
	for _, o := range ops {
		fmt.Fprintf(out, "%c%s\n", o.kind, o.text)
	}
}

// span is a hunk range as diff writes it: an empty range names the line
// before it.
func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
