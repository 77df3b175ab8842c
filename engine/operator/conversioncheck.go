package operator

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/template"
)

// Bounds of the stored CRs' specs a revision's conversions are checked
// on (storedSpecs), read and checked with o.mu held: at most
// maxStoredSpecs distinct specs of at most maxStoredSpecBytes of JSON in
// all (a larger spec is not checked), among the first maxStoredListed CRs
// listed, storedSpecsPage at a time, within storedSpecsTime. A tenant's
// CRs, however many or large, cost a reload about a second of checks.
const (
	maxStoredSpecs     = 200
	maxStoredSpecBytes = 1 << 20
	maxStoredListed    = 5000
	storedSpecsPage    = 100
	storedSpecsTime    = 30 * time.Second
)

// checkRoundTrips runs on k's conversions the check `cueop vet` runs
// (convert.Converter.CheckSpecs): the specs generated from each version of
// k's CRD, then the specs of the CRs stored, as far as they can be read
// (storedSpecs), each converted to the other side of the hub and back. A
// conversion that loses or invents a field is refused with vet's message
// and CUE position; the caller keeps the last good revision converting.
// A stored spec refuses k only when the revision converting now passes
// it: one it fails too (or any, when no revision converts yet: a start)
// is logged, not held against k, so that a tenant's CR cannot keep every
// revision of its kind refused, nor its kind unserved after a restart.
// A kind with one version has nothing to check.
func (c *conversions) checkRoundTrips(ctx context.Context, k *template.Kind) error {
	conv, err := convert.New(k)
	if err != nil || conv == nil {
		return err
	}
	crd, err := crdgen.Generate(k)
	if err != nil {
		return err
	}
	conv = conv.WithBudget(c.budget)
	if err := conv.CheckSpecs(convert.GeneratedSpecs(crd)); err != nil {
		return err
	}
	var serving *convert.Converter
	if prev := c.convertingKind(k); prev != nil {
		if serving, _ = convert.New(prev); serving != nil {
			serving = serving.WithBudget(c.budget)
		}
	}
	var regressions []convert.Spec
	var old []error
	for _, s := range c.storedSpecs(ctx, k, crd.Name) {
		err := conv.CheckSpecs([]convert.Spec{s})
		if err == nil {
			continue
		}
		if serving == nil || serving.CheckSpecs([]convert.Spec{s}) != nil {
			old = append(old, err)
			continue
		}
		regressions = append(regressions, s)
	}
	if len(old) > 0 {
		c.log.Info("conversion check: stored CRs' specs that do not round-trip under the revision converting now either (or none converts yet), not held against the new one",
			"kind", k.Resource.Kind, "revision", k.Revision, "specs", len(old), "first", old[0].Error())
	}
	return conv.CheckSpecs(regressions)
}

// storedSpecs are the distinct specs of k's CRs, listed in every namespace
// from the API server at the storage version of the CRD it serves (crd),
// when k serves that version, a page at a time, within the bounds above.
// A list that fails ends them, logged: the check takes what was read.
// None are read while some are stored at another version and no revision
// of the kind converts yet: their reads would wait on this webhook.
func (c *conversions) storedSpecs(ctx context.Context, k *template.Kind, crd string) []convert.Spec {
	if c.reader == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storedSpecsTime)
	defer cancel()
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: crd}, live); err != nil {
		if !apierrors.IsNotFound(err) {
			c.log.Error(err, "conversion check: stored CRs not read", "crd", crd)
		}
		return nil
	}
	version, others := migrate.Pending(live)
	if k.Version(version) == nil || len(others) > 0 && !c.converting(k) {
		// CRs stored at other versions read through this webhook, which
		// converts no revision of the kind yet (a start mid-migration).
		return nil
	}
	var out []convert.Spec
	seen := map[[sha256.Size]byte]bool{}
	bytes, listed, large := 0, 0, 0
	defer func() {
		if large > 0 {
			c.log.Info("conversion check: stored specs too large to check skipped", "crd", crd, "skipped", large, "checked", len(out))
		}
	}()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(live.Spec.Group + "/" + version)
	list.SetKind(live.Spec.Names.ListKind)
	for {
		if err := c.reader.List(ctx, list, client.Limit(storedSpecsPage), client.Continue(list.GetContinue())); err != nil {
			c.log.Error(err, "conversion check: stored CRs read in part", "crd", crd, "specs", len(out))
			return out
		}
		for _, cr := range list.Items {
			listed++
			spec, _ := cr.Object["spec"].(map[string]any)
			js, err := json.Marshal(spec)
			if err != nil || seen[sha256.Sum256(js)] {
				continue
			}
			seen[sha256.Sum256(js)] = true
			if bytes+len(js) > maxStoredSpecBytes {
				large++
				continue
			}
			bytes += len(js)
			name := cr.GetName()
			if ns := cr.GetNamespace(); ns != "" {
				name = ns + "/" + name
			}
			out = append(out, convert.Spec{Version: version, Spec: spec, Source: k.Resource.Kind + " " + name})
			if len(out) == maxStoredSpecs {
				return out
			}
		}
		if list.GetContinue() == "" || listed >= maxStoredListed {
			return out
		}
	}
}
