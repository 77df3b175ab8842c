package testkit

// Kinds that tests of several packages share, as the CUE source of a
// package of a templates directory (Templates, Kinds).

// ParentObserved declares, in the multi-line form most kinds of the tests
// write it, a kind's parent (its name, namespace and #Spec) and its
// observed children of any shape: the lines every kind with a status from
// its children repeats. A kind's source splices it in place, so that the
// CUE positions of the lines around it stay what the source shows.
const ParentObserved = `parent: {
	metadata: {name: string, namespace: string}
	spec: #Spec
}
observed: [string]: {...}
`

// DigestKind (package digest) reads the ConfigMaps labelled for its CR, by
// a selector, and lists their names in a ConfigMap of its own.
const DigestKind = `package digest

import "strings"

resource: {group: "compose.test.example", version: "v1", kind: "Digest"}
#Spec: {}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
referenced: all: [...{metadata: name: string}]
references: all: {apiVersion: "v1", kind: "ConfigMap", selector: matchLabels: digest: parent.metadata.name}
children: out: {
	apiVersion: "v1"
	kind:       "ConfigMap"
	metadata: name: "\(parent.metadata.name)-digest"
	data: names: strings.Join([for o in referenced.all {o.metadata.name}], ",")
}
`

// NormalisingKind (package app) serves v1, its hub, and v2: the hub lowers
// the case of v2's tier, which reads back as the hub holds it, and lacks
// v2's c.
const NormalisingKind = `package app
import "strings"
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {a: int, tier?: string}
parent: spec: #Spec
children: {}
versions: v2: {
	#Spec: {a: int, tier?: string, c?: int}
	toHub: {in: spec: _, out: spec: {a: in.spec.a, if in.spec.tier != _|_ {tier: strings.ToLower(in.spec.tier)}}}
	fromHub: {in: spec: _, out: spec: {a: in.spec.a, if in.spec.tier != _|_ {tier: in.spec.tier}}}
}
`
