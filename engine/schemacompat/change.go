package schemacompat

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Path is a field path from the root of a CR: field names, Items for the
// elements of a list and Values for the values of a map.
type Path []string

// The path elements of list elements and map values.
const (
	Items  = "[_]"
	Values = "[string]"
)

// String returns the path as `spec.servers[_].port`.
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		if e != Items && e != Values && b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

func (p Path) child(e string) Path {
	return append(p[:len(p):len(p)], e)
}

// Change is one difference between the old and the new schema of a served
// version.
type Change struct {
	// Version is the CRD version whose schema changed.
	Version string
	// Path is the field in the old schema; the object that carries a rule
	// for a rule change; empty for a version change.
	Path Path
	// NewPath is the field's new path for a rename.
	NewPath Path
	// What is the keyword or kind of change: "removed", "renamed",
	// "added", "type", "maximum", "default", "enum", "required",
	// "x-kubernetes-validations", "version", ...
	What string
	// Old and New are the values before and after, as text ("none" when
	// there is none).
	Old, New string
	// Breaking tells that CRs stored under the old schema may read or
	// validate differently under the new one.
	Breaking bool
	// OldDefault is the field's default before the change, for a default
	// change (Count counts the CRs that hold it).
	OldDefault *apiextensionsv1.JSON

	// Pos is the CUE position of the field in the new template
	// (file:line:column), set by Locate; for a removed field, that of the
	// nearest enclosing field that still exists, and Removed is set.
	Pos string
	// Removed tells that Pos is the parent's: the field is gone.
	Removed bool

	// Counted tells that Count ran; Stored is the number of stored CRs
	// read at Version, Set those that set the field (for a rule, the
	// object; for a version, every CR), and Defaulted those that hold
	// OldDefault.
	Counted                bool
	Stored, Set, Defaulted int
}

// String returns `v1 spec.replicas: maximum <=100 -> <=10`; a rename
// `v1 spec.replicas -> spec.size: renamed`.
func (c Change) String() string {
	var b strings.Builder
	b.WriteString(c.Version)
	if len(c.Path) > 0 {
		b.WriteString(" " + c.Path.String())
	}
	switch {
	case c.What == "renamed":
		fmt.Fprintf(&b, " -> %s: renamed", c.NewPath)
	case c.What == WhatManagedFields:
		fmt.Fprintf(&b, ": version %s -> %s", c.Old, c.New)
	case c.Old == "" && c.New == "":
		fmt.Fprintf(&b, ": %s", c.What)
	default:
		fmt.Fprintf(&b, ": %s %s -> %s", c.What, orNone(c.Old), orNone(c.New))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Breaking returns the breaking changes of cs.
func Breaking(cs []Change) []Change {
	var out []Change
	for _, c := range cs {
		if c.Breaking {
			out = append(out, c)
		}
	}
	return out
}
