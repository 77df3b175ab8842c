package schemacompat

import (
	"fmt"
	"strings"
)

// WayForward is what a refusal tells the author to do instead.
const WayForward = "a version's schema is a contract with the CRs stored at it: put the schema back, " +
	"or serve the new schema as a new version beside this one, with a conversion from it " +
	"(a spoke under versions in the template contract); a kind with no stored CR takes any change"

// WayForwardVersion is what a refusal to stop serving a stored version
// tells the author.
const WayForwardVersion = "keep serving it until cueop's storage migration has rewritten every stored CR " +
	"at the storage version and status.storedVersions lists the storage version alone " +
	"(the CRD's StorageMigrating condition says how far it got)"

// WhatManagedFields is the What of a Change that stops serving a version
// stored CRs have managedFields entries at (schemaguard counts them).
const WhatManagedFields = "managedFields"

// Refusal is the error of a breaking schema change: the kind, the breaking
// changes (counted and located where that was possible) and the way
// forward.
type Refusal struct {
	// Kind is the kind and group, `RedisCluster.cache.example.com`.
	Kind string
	// Changes are the breaking changes.
	Changes []Change
	// Stored is the number of stored CRs of the kind; -1 when they were not
	// counted (offline).
	Stored int
	// Source, offline, is the file of the CRD compared with.
	Source string
	// Acknowledge, when set, says how to let the change through
	// (offline: a flag).
	Acknowledge string
}

// Error returns one line for the kind, one per change, and the way
// forward.
func (r *Refusal) Error() string {
	var b strings.Builder
	b.WriteString(r.Kind + ": breaking schema change refused: ")
	if r.Stored >= 0 {
		fmt.Fprintf(&b, "it would change what stored CRs mean (the kind has %s)", crs(r.Stored))
	} else {
		fmt.Fprintf(&b, "the CRD in %s serves the version it changes: CRs stored at it would change meaning", r.Source)
	}
	if r.Acknowledge != "" {
		fmt.Fprintf(&b, " (to let it through deliberately: %s)", r.Acknowledge)
	}
	return b.String() + r.Details()
}

// Details are the changes, one per line, and the way forward, each line
// indented and preceded by a line break.
func (r *Refusal) Details() string {
	var b strings.Builder
	version := false
	for _, c := range r.Changes {
		b.WriteString("\n  " + c.Explain())
		version = version || c.What == "version"
	}
	if version {
		b.WriteString("\n  a version status.storedVersions lists: " + WayForwardVersion)
	}
	b.WriteString("\n  way forward: " + WayForward)
	return b.String()
}

// Explain is the change with its CUE position and its counts.
func (c Change) Explain() string {
	s := c.String()
	if c.Pos != "" {
		if c.Removed {
			s += " (removed from the template; its parent is at " + c.Pos + ")"
		} else {
			s += " (at " + c.Pos + ")"
		}
	}
	if c.Counted {
		s += ": " + c.counts()
	}
	return s
}

func (c Change) counts() string {
	switch {
	case c.What == "version":
		return fmt.Sprintf("status.storedVersions lists it; %s", crs(c.Stored))
	case c.What == WhatManagedFields:
		return fmt.Sprintf("managedFields entries at it in %d of %s (once it is not served, every write of such a CR fails, "+
			"its status included): cueop moves them to the storage version first, and refuses while it could not", c.Set, crs(c.Stored))
	case c.What == "default" && c.OldDefault == nil:
		return fmt.Sprintf("left out by %d of %s, which would read the new default", c.Stored-c.Set, crs(c.Stored))
	case c.What == "default":
		return fmt.Sprintf("set in %d of %s, %d of them to %s, the old default (by the user or by defaulting: "+
			"the API server fills defaults on read, so the two cannot be told apart)", c.Set, crs(c.Stored), c.Defaulted, raw(c.OldDefault))
	}
	return fmt.Sprintf("set in %d of %s", c.Set, crs(c.Stored))
}

func crs(n int) string {
	if n == 1 {
		return "1 stored CR"
	}
	return fmt.Sprintf("%d stored CRs", n)
}
