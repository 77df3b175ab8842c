package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// ANSI colours of WriteText.
const (
	bold   = "\x1b[1m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	cyan   = "\x1b[36m"
	reset  = "\x1b[0m"
)

// marks are the sign of each action in the text output.
var marks = map[Action]string{Create: "+", Update: "~", Recreate: "!", Refused: "x", Prune: "-", Release: "?", Conflict: "x", Adopt: "~"}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the summary table, the errors, then each changing or
// failed CR with its children and their diffs; color adds ANSI colours.
func (r *Report) WriteText(w io.Writer, color bool) error {
	p := &printer{w: w, color: color}
	p.files(r)
	p.summary(r)
	p.errors(r)
	for _, c := range r.CRs {
		p.cr(c)
	}
	return p.err
}

// WriteSummary writes the summary table, the errors, and a line per CR
// that fails or has a destructive change, without diffs.
func (r *Report) WriteSummary(w io.Writer, color bool) error {
	p := &printer{w: w, color: color}
	p.files(r)
	p.summary(r)
	p.errors(r)
	for _, c := range r.CRs {
		if n := destructive(c); c.Failed() || n > 0 {
			style := yellow
			if c.Failed() {
				style = red
			}
			p.line(style, fmt.Sprintf("%s %s/%s: %d destructive, failed: %t", c.Kind, c.Namespace, c.Name, n, c.Failed()))
		}
	}
	return p.err
}

func destructive(c CR) int {
	n := 0
	for _, ch := range c.Children {
		if ch.Destructive {
			n++
		}
	}
	return n
}

// files says which kubectl apply each CR of a file is previewed as.
func (p *printer) files(r *Report) {
	for _, f := range r.Files {
		p.line(cyan, fmt.Sprintf("%s %s/%s: %s", f.Kind, f.Namespace, f.Name, f.Why))
	}
}

func (p *printer) errors(r *Report) {
	for _, e := range r.Errors {
		p.line(red, "error: "+e)
	}
}

type printer struct {
	w     io.Writer
	color bool
	err   error
}

func (p *printer) line(style, s string) {
	if p.err != nil {
		return
	}
	if p.color && style != "" {
		s = style + s + reset
	}
	_, p.err = fmt.Fprintln(p.w, s)
}

func (p *printer) summary(r *Report) {
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tCRS\tUNCHANGED\tCHANGING\tFAILED\tCREATE\tUPDATE\tPRUNE\tRECREATE\tREFUSED\tDESTRUCTIVE\tWAITING")
	for _, s := range r.Kinds {
		name := s.Kind + "." + s.Group
		if s.NotServed {
			fmt.Fprintf(tw, "%s\t-\tnot served by the cluster (no CRD)\t\t\t\t\t\t\t\t\t\n", name)
			continue
		}
		ch := s.Children
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", name, s.CRs, s.Unchanged, s.Changing, s.Failed,
			ch[Create], ch[Update]+ch[Adopt], ch[Prune]+ch[Release], ch[Recreate], ch[Refused]+ch[Conflict], s.Destructive, s.Waiting)
	}
	if err := tw.Flush(); err != nil && p.err == nil {
		p.err = err
	}
}

func (p *printer) cr(c CR) {
	p.line("", "")
	p.line(bold, fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Name))
	if c.Error != "" {
		for _, l := range strings.Split(c.Error, "\n") {
			p.line(red, "  error: "+l)
		}
	}
	p.diff(c.Diff)
	for _, ch := range c.Children {
		p.child(ch)
	}
}

func (p *printer) child(ch Child) {
	style := ""
	switch {
	case ch.Action == Refused, ch.Action == Conflict:
		style = red
	case ch.Destructive:
		style = yellow
	}
	s := fmt.Sprintf("  %s %-8s %s %s/%s (children.%s)", marks[ch.Action], ch.Action, ch.Kind, ch.Namespace, ch.Name, ch.ID)
	if ch.Wave != nil {
		s += fmt.Sprintf(" wave %d", *ch.Wave)
	}
	if ch.Destructive {
		s += " DESTRUCTIVE"
	}
	p.line(style, s)
	if ch.Reason != "" {
		for _, l := range strings.Split(ch.Reason, "\n") {
			p.line(style, "      "+l)
		}
	}
	if ch.Waiting != "" {
		p.line(style, "      "+ch.Waiting)
	}
	p.diff(ch.Diff)
}

func (p *printer) diff(d string) {
	for _, l := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
		if l != "" {
			p.line(diffStyle(l), l)
		}
	}
}

func diffStyle(l string) string {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		return bold
	case strings.HasPrefix(l, "@@"):
		return cyan
	case strings.HasPrefix(l, "+"):
		return green
	case strings.HasPrefix(l, "-"):
		return red
	}
	return ""
}
