package template

import (
	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is the `resource` field of a kind's template: the identity of the
// custom resource and how kubectl presents it.
type Resource struct {
	Group          string          `json:"group"`
	Version        string          `json:"version"`
	Kind           string          `json:"kind"`
	Plural         string          `json:"plural,omitempty"`
	Singular       string          `json:"singular,omitempty"`
	ShortNames     []string        `json:"shortNames,omitempty"`
	Categories     []string        `json:"categories,omitempty"`
	PrinterColumns []PrinterColumn `json:"printerColumns,omitempty"`
	Scale          *Scale          `json:"scale,omitempty"`
}

// CRDName is plural.group, the name of a kind's CustomResourceDefinition:
// the one place it is built.
func CRDName(plural, group string) string { return plural + "." + group }

// CRDName is the name of the resource's CustomResourceDefinition,
// plural.group.
func (r Resource) CRDName() string { return CRDName(r.Plural, r.Group) }

// ID is how cueop names the kind to a person: Kind.group,
// `RedisCluster.cache.example.com` (the value --allow-breaking takes).
func (r Resource) ID() string { return r.Kind + "." + r.Group }

// PrinterColumn is one additional column of `kubectl get`.
type PrinterColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	JSONPath    string `json:"jsonPath"`
	Description string `json:"description,omitempty"`
	Format      string `json:"format,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
}

// Scale names the replica paths of the scale subresource.
type Scale struct {
	SpecReplicasPath   string `json:"specReplicasPath"`
	StatusReplicasPath string `json:"statusReplicasPath"`
	LabelSelectorPath  string `json:"labelSelectorPath,omitempty"`
}

// GroupVersionKind returns the custom resource's GVK.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// Kind is one compiled kind of a templates directory. It is immutable: a
// template edit produces a new Kind with a new Revision.
type Kind struct {
	// Name is the kind's package directory, relative to the templates root.
	Name string
	// Dir is the absolute directory of the kind's package.
	Dir string
	// Revision is a short content hash of the files the kind is built from.
	Revision string
	// Source is where those files came from.
	Source Source
	// Files are those files' bytes (the module file and every file read
	// below the kind's package directories), by slash path relative to the
	// root: what a render worker compiles the kind from once the directory
	// has moved on (LoadKindFiles).
	Files map[string][]byte
	// Resource is the decoded `resource` field.
	Resource Resource
	// Spec is the `#Spec` definition.
	Spec cue.Value
	// Status is the `#Status` definition; it does not exist when the kind
	// declares no status fields of its own.
	Status cue.Value
	// StatusChecked tells that the template writes its status as
	// #Status & {...}, so that a render need not unify it with Status again.
	StatusChecked bool
	// Value is the whole compiled package.
	Value cue.Value
	// Immutable are the #Spec fields marked @cueop(immutable).
	Immutable []ImmutableField
	// Hotspots are the positions of the comprehensions and repeating
	// calls of the kind's package, most deeply nested first: where to look
	// when a render runs out of budget.
	Hotspots []string
	// References tells that the template reads objects beyond its children
	// (references.go); Waves that it orders its children and ReadyWhen that
	// it gives readiness expressions (waves.go).
	// References is also true for references declared in a top-level if
	// or for (condrefs.go): each CR's are evaluated once it is filled in.
	References, Waves, ReadyWhen bool
	// ReferencesUnknown are the places of the kind's package where cueop
	// cannot tell whether `references` is declared (a computed top-level
	// label), as "file:line:column: what": `cueop vet` warns of them.
	ReferencesUnknown []string
	// Conditions tells that the template gives conditions of its own
	// (conditions.go).
	Conditions bool
	// Reads is what the template reads of observed and parent (paths.go):
	// the render converts only that of each live object.
	Reads *Reads
	// Outputs is what its status, conditions, ready and readyWhen read of
	// the observed children (outputreads.go).
	Outputs *Outputs
	// Versions are the served versions of the kind, the hub
	// (Resource.Version, the storage version) first, then the spokes
	// declared under versions, by name (versions.go). A kind with one
	// version has only the hub.
	Versions []Version
}

// Source is where a kind's files came from: a templates directory, or a
// CUE module fetched from a registry.
type Source struct {
	// Ref is the templates directory (absolute), or the module reference
	// as given (oci://host/path@version).
	Ref string
	// Module and Version are the module path and the version fetched, for
	// a registry source.
	Module, Version string
	// Digest is the manifest digest of the module version fetched
	// (sha256:...); empty for a directory.
	Digest string
}
