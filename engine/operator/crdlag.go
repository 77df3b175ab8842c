package operator

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/template"
)

// The schema travels with the template. When cueop does not install the
// CRDs (--install-crds=false: a GitOps tool or an administrator applies
// crds/), a revision whose schema has a field the served CRD lacks is not
// served: the API server would prune that field from every CR written,
// silently, and the template would read it absent. The revision waits,
// retried with backoff (unserved.go), while the revision before keeps
// serving; once the CRD is applied with the field, it serves. A CRD that
// has more than the revision (a field the revision dropped) is the schema
// guard's to judge, not this check's.

// maxLagged bounds the fields a lag names.
const maxLagged = 20

// crdLagError is a revision whose fields the served CRD lacks.
type crdLagError struct {
	kind, revision, crd, version string
	fields                       []string
}

func (e crdLagError) Error() string {
	return fmt.Sprintf("kind %s: revision %s not served: the served CRD %s lacks at version %s the fields %s, which the API server would prune from every write; cueop does not install CRDs (--install-crds=false): apply this revision's CRD (crds/ of `cueop manifests`), and the revision serves",
		e.kind, e.revision, e.crd, e.version, strings.Join(e.fields, ", "))
}

// lag answers a crdLagError when the live CRD of k lacks, at k's version,
// a field of k's schema; nil when it has them all, or is not there (a
// kind waiting for its CRD, crdwait.go).
func (c *crdWriter) lag(ctx context.Context, k *template.Kind) error {
	want, err := crdgen.Generate(k)
	if err != nil {
		return err
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: want.Name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("CustomResourceDefinition %s: %w", want.Name, err)
	}
	have := versionSchema(live, k.Resource.Version)
	if have == nil {
		return nil // the version is not served yet: the kind waits for it (crdwait.go)
	}
	var missing []string
	lacking(versionSchema(want, k.Resource.Version), have, "", &missing)
	missing = slices.DeleteFunc(missing, func(p string) bool { return p == "apiVersion" || p == "kind" || p == "metadata" }) // never pruned
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	if len(missing) > maxLagged {
		missing = append(missing[:maxLagged], fmt.Sprintf("and %d more", len(missing)-maxLagged))
	}
	return crdLagError{kind: k.Resource.ID(), revision: k.Revision, crd: want.Name, version: k.Resource.Version, fields: missing}
}

// versionSchema is the schema of crd at version, nil when it serves no
// such version or has no schema.
func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.JSONSchemaProps {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	return nil
}

// lacking adds to out the paths below path that want has and have does
// not: properties, the items of lists and the values of maps. A level of
// have that keeps unknown fields lacks nothing below it.
func lacking(want, have *apiextensionsv1.JSONSchemaProps, path string, out *[]string) {
	if want == nil || have == nil || ptrTrue(have.XPreserveUnknownFields) {
		return
	}
	for name, w := range want.Properties {
		p := strings.TrimPrefix(path+"."+name, ".")
		h, ok := have.Properties[name]
		switch {
		case ok:
			lacking(&w, &h, p, out)
		case openMap(have):
			lacking(&w, have.AdditionalProperties.Schema, p, out) // a key of have's map
		default:
			*out = append(*out, p)
		}
	}
	if want.Items != nil && want.Items.Schema != nil && have.Items != nil {
		lacking(want.Items.Schema, have.Items.Schema, path+"[]", out)
	}
	if !openMap(want) {
		return
	}
	switch {
	case openMap(have):
		lacking(want.AdditionalProperties.Schema, have.AdditionalProperties.Schema, path+"{}", out)
	default: // keys have does not name are pruned
		*out = append(*out, strings.TrimPrefix(path+"{}", "."))
	}
}

// openMap tells whether s keeps keys it does not name (additionalProperties).
func openMap(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.AdditionalProperties != nil && (s.AdditionalProperties.Allows || s.AdditionalProperties.Schema != nil)
}

func ptrTrue(b *bool) bool { return b != nil && *b }
