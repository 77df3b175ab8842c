package main

import (
	"bytes"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// kindRights renders every golden case that should succeed and every
// sample, and returns, for each kind of set in order, the kinds of the
// children they render and of the objects they reference. Rendering with
// the administrator's allow-lists keeps the result inside them: a child of
// another kind is an error, as it would be in the controller.
func kindRights(set *template.Set, testdata, samples string, opts render.Options) ([]identity.Kind, error) {
	cases, err := renderedParents(set, testdata, samples)
	if err != nil {
		return nil, err
	}
	kinds := make([]identity.Kind, len(set.Kinds))
	byName := map[string]*identity.Kind{}
	for i, k := range set.Kinds {
		kinds[i] = identity.Kind{GroupKind: schema.GroupKind{Group: k.Resource.Group, Kind: k.Resource.Kind}, Plural: k.Resource.Plural,
			Children: render.KindSet{}, References: render.KindSet{}}
		byName[k.Name] = &kinds[i]
	}
	var errs []error
	for _, c := range cases {
		if err := addRights(byName[c.kind.Name], c, opts); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.source, err))
		}
	}
	return kinds, errors.Join(errs...)
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
