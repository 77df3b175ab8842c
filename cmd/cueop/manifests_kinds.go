package main

import (
	"bytes"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// kindsPath holds the kinds' identities: their ServiceAccounts, roles and
// bindings, and the operator's right to impersonate them.
const kindsPath = "config/rbac/kinds.yaml"

// rights are what each kind of a set may render and reference, the one
// computation behind the roles of `cueop manifests`, `cueop vet` and
// `cueop dev`.
type rights struct {
	// kinds are the kinds of the set, in order, with the kinds their
	// templates can render and reference and their golden cases and
	// samples do.
	kinds []identity.Kind
	// warnings, each at a file:line:col, are where a template does not
	// tell a child's or reference's kind (identity.Derive).
	warnings []string
	// refused are the kinds a template has that the allow-lists refuse,
	// each with its position: what rendering one would refuse.
	refused error
}

// kindRights is the rights of set's kinds: what each template can render
// and reference, read from its source (identity.Derive, every branch of
// every conditional), with what every golden case that should succeed
// and every sample render and reference. The allow-lists keep the result
// inside them: a child of another kind is refused (rights.refused; err
// for a render), as it would be in the controller. err says which cases
// did not render.
func kindRights(set *template.Set, testdata, samples string, opts render.Options) (rights, error) {
	cases, err := renderedParents(set, testdata, samples) // manifests.go
	if err != nil {
		return rights{}, err
	}
	var r rights
	var refused []error
	byName := map[string]*identity.Kind{}
	r.kinds = make([]identity.Kind, len(set.Kinds))
	for i, k := range set.Kinds {
		var warnings []string
		var err error
		r.kinds[i], warnings, err = identity.DeriveAllowed(k, opts)
		r.warnings, refused = append(r.warnings, warnings...), append(refused, err)
		byName[k.Name] = &r.kinds[i]
	}
	r.refused = errors.Join(refused...)
	var errs []error
	for _, c := range cases {
		if err := addRights(byName[c.kind.Name], c, opts); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.source, err))
		}
	}
	return r, errors.Join(errs...)
}

// addRights renders c, first render and, with observed children, the
// render that sees them, and adds the kinds of the children and of the
// references to k.
func addRights(k *identity.Kind, c parentCase, opts render.Options) error {
	results := make([]*render.Result, 0, 2)
	res, err := golden.RenderCase(c.kind, c.parent, nil, c.referenced, opts)
	if err != nil {
		return err
	}
	results = append(results, res)
	if len(c.observed) > 0 {
		if res, err = golden.RenderCase(c.kind, c.parent, c.observed, c.referenced, opts); err != nil {
			return err
		}
		results = append(results, res)
	}
	for _, r := range results {
		for _, ch := range r.Children {
			k.Children[ch.Object.GroupVersionKind().GroupKind()] = true
		}
	}
	hub, err := golden.ToHub(c.kind, c.parent)
	if err != nil {
		return err
	}
	refs, err := render.References(c.kind, hub, opts)
	for _, r := range refs {
		k.References[r.GroupVersionKind().GroupKind()] = true
	}
	return err
}

// identities are the kinds' identities under the flags; nil with
// --shared-identity.
func identities(kinds []identity.Kind, f identityFlags) ([]identity.Identity, error) {
	cfg, err := f.config()
	if err != nil || cfg == nil {
		return nil, err
	}
	ids := make([]identity.Identity, 0, len(kinds))
	for _, k := range kinds {
		ids = append(ids, identity.For(k, cfg))
	}
	return ids, nil
}

// kindsYAML is config/rbac/kinds.yaml: the identities' objects, or with
// the shared identity only a comment saying so.
func kindsYAML(ids []identity.Identity, shared bool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(generatedHeader)
	if shared {
		b.WriteString("# --shared-identity: every kind acts as the operator, whose role.yaml holds\n# every kind's rights. No kind has an identity of its own.\n")
		return b.Bytes(), nil
	}
	for _, o := range identity.Objects(ids, operatorServiceAccount) {
		y, err := objectYAML(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kindsPath, err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// objectYAML is o as YAML, without the empty creationTimestamp of a typed
// object never stored.
func objectYAML(o client.Object) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
	}
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(u)
}
