package crdgen

import (
	"strings"
	"testing"
)

// TestDescriptions: the CRD's description is the package doc comment
// without "Package x is", and spec's and status's are the #Spec and #Status
// doc comments without their names.
func TestDescriptions(t *testing.T) {
	crd := generateValid(t, `// Package widget is the Widget kind: a
// gadget with parts.
package widget

// #Spec is what a user asks for.
#Spec: {
	// replicas is how many.
	replicas: *1 | int
}

// #Status are the counts cueop observes.
#Status: {ready: int}
`)
	root := rootOf(crd)
	for name, got := range map[string]struct{ got, want string }{
		"kind":          {root.Description, "The Widget kind: a\ngadget with parts."},
		"spec":          {root.Properties["spec"].Description, "What a user asks for."},
		"status":        {root.Properties["status"].Description, "The counts cueop observes."},
		"spec.replicas": {root.Properties["spec"].Properties["replicas"].Description, "replicas is how many."},
	} {
		if got.got != got.want {
			t.Errorf("%s description = %q, want %q", name, got.got, got.want)
		}
	}

	crd = generateValid(t, `package widget

// The wishes of a user.
#Spec: {replicas: *1 | int}
`)
	root = rootOf(crd)
	if got := root.Properties["spec"].Description; got != "The wishes of a user." {
		t.Errorf("spec description = %q, want the doc comment as it is", got)
	}
	if got := root.Description; !strings.Contains(got, "Widget is a custom resource") {
		t.Errorf("description of a kind without package doc = %q, want the generic one", got)
	}
	if got := root.Properties["status"].Description; got != statusDoc {
		t.Errorf("status description = %q, want the engine's", got)
	}
}
