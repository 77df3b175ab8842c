package template

import "cuelang.org/go/cue"

// The template contract: every CUE path the Go code reads or fills, named
// once, here. See ARCHITECTURE.md for what each means to a template author.

// The fields of the contract by name, where Go code compares or builds a
// label rather than looking a path up.
const (
	FieldResource   = "resource"
	FieldSpecDef    = "#Spec"
	FieldStatusDef  = "#Status"
	FieldParent     = "parent"
	FieldObserved   = "observed"
	FieldChildren   = "children"
	FieldStatus     = "status"
	FieldReady      = "ready"
	FieldWaves      = "waves"
	FieldReadyWhen  = "readyWhen"
	FieldConditions = "conditions"
	FieldVersions   = "versions"
	// FieldReferenced is the name of the field cueop fills with the
	// objects read.
	FieldReferenced = "referenced"
)

// The core contract: the kind (resource), its spec and status schemas, the
// CR cueop fills in as parent and the children observed, and what the
// template computes from them (children, status, ready).
var (
	PathResource        = cue.ParsePath("resource")
	PathResourceKind    = cue.ParsePath("resource.kind")
	PathResourceVersion = cue.ParsePath("resource.version")
	PathSpec            = cue.ParsePath("#Spec")
	PathStatusDef       = cue.ParsePath("#Status")
	PathParent          = cue.ParsePath("parent")
	PathParentSpec      = cue.ParsePath("parent.spec")
	PathObserved        = cue.ParsePath("observed")
	PathChildren        = cue.ParsePath("children")
	PathStatus          = cue.ParsePath("status")
	PathReady           = cue.ParsePath("ready")
)

// The waves contract: the order in which children are applied and deleted.
var (
	// PathWaves is the optional `waves` field: per child id, the wave the
	// child belongs to (default 0). A child of wave k is applied once every
	// child of the lower waves exists and is ready; a CR being deleted loses
	// its children in reverse wave order.
	PathWaves = cue.ParsePath("waves")
	// PathReadyWhen is the optional `readyWhen` field: per child id, whether
	// the observed child is ready, instead of kstatus (a Job: its Complete
	// condition).
	PathReadyWhen = cue.ParsePath("readyWhen")
)

// PathConditions is the optional `conditions` field: per condition type,
// the template's own conditions (Migrated, Available, ...), computed from
// parent and observed. cueop merges them into status.conditions beside
// its own Ready, Reconciling and Stalled, keeping each one's
// lastTransitionTime and setting its observedGeneration.
var PathConditions = cue.ParsePath("conditions")

// PathPolicies is the optional `policies` field: per child id, what the
// engine may do to that child beyond applying it (recreate it on an
// immutable change, prune it, delete it with its CR, adopt an existing
// object of its name).
var PathPolicies = cue.ParsePath("policies")

// The references contract: what a template reads beyond its children.
var (
	// PathReferences is the optional `references` field: per reference id,
	// an object to read ({apiVersion, kind, name}) or a label selection
	// ({apiVersion, kind, selector}), in the CR's namespace, computed from
	// the spec.
	PathReferences = cue.ParsePath("references")
	// PathReferenced is what cueop fills: per reference id, the object read
	// (a list of objects for a selector, sorted by name).
	PathReferenced = cue.ParsePath("referenced")
)

// The versions contract: a kind may serve spokes besides its hub, each
// declared at versions.<name> with its own #Spec (and #Status) and the
// conversions between it and the hub (toHub, fromHub; engine/convert):
// each conversion reads in and writes out.
var (
	PathVersions  = cue.ParsePath("versions")
	PathToHub     = cue.ParsePath("toHub")
	PathFromHub   = cue.ParsePath("fromHub")
	PathIn        = cue.ParsePath("in")
	PathInSpec    = cue.ParsePath("in.spec")
	PathInStatus  = cue.ParsePath("in.status")
	PathOut       = cue.ParsePath("out")
	PathOutSpec   = cue.ParsePath("out.spec")
	PathOutStatus = cue.ParsePath("out.status")
)
