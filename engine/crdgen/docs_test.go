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
		"kind":          {root.Description, "The Widget kind: a gadget with parts."},
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

// TestDescriptionsReflowed: a doc comment's hard line breaks are joined, so
// that `kubectl explain` does not break a sentence mid-line; blank-line
// paragraphs, list items and indented code stay as they are.
func TestDescriptionsReflowed(t *testing.T) {
	crd := generateValid(t, `package widget

#Spec: {
	// Container image of the blog engine. Any image that serves HTTP on
	// port 2368 will do.
	//
	// Examples:
	// - ghost:5, the default,
	//   which is large
	// - ghost:5-alpine
	// 1. first
	// 2. second
	//
	//	image: ghost:5
	//	replicas: 2
	// Then more
	// text.
	image: *"ghost:5" | string
}
`)
	got := rootOf(crd).Properties["spec"].Properties["image"].Description
	want := "Container image of the blog engine. Any image that serves HTTP on port 2368 will do.\n\n" +
		"Examples:\n- ghost:5, the default, which is large\n- ghost:5-alpine\n1. first\n2. second\n\n" +
		"\timage: ghost:5\n\treplicas: 2\nThen more text."
	if got != want {
		t.Errorf("description:\n%q\nwant\n%q", got, want)
	}
}
