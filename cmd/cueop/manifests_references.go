package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
)

// readableKindsEnv sets the default of `cueop run --readable-kinds`; the
// generated Deployment patch sets it to the readable kinds given to
// `cueop manifests`.
const readableKindsEnv = "CUEOP_READABLE_KINDS"

// readOnlyResources are the REST resources of the readable kinds that are
// not child kinds too (those have get, list and watch already): the role
// grants get, list and watch on them, nothing more.
func readOnlyResources(readable, children render.KindSet) []schema.GroupResource {
	only := render.KindSet{}
	for gk := range readable {
		if !children[gk] {
			only[gk] = true
		}
	}
	return childResources(only)
}
