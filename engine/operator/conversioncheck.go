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
	"github.com/cueop/cueop/engine/wellknown"
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
// A stored spec refuses k only when k would break it (heldAgainst): one
// the revision converting now fails too, or, at a start, one k converted
// already (the live CRD is k's), is logged (an ERROR line), not held
// against k, so that a tenant's CR cannot keep every revision of its kind
// refused, nor its kind unserved after a restart. A kind with one version
// has nothing to check.
func (c *conversions) checkRoundTrips(ctx context.Context, k *template.Kind) error {
	conv, err := convert.New(k)
	if err != nil || conv == nil {
		return err
	}
	crd, err := crdgen.Generate(k)
	if err != nil {
		return err
	}
	if err := c.check(ctx, k, convert.GeneratedSpecs(crd)); err != nil {
		return err
	}
	stored, liveRevision := c.storedSpecs(ctx, k, crd.Name)
	if len(stored) == 0 || c.check(ctx, k, stored) == nil {
		return nil
	}
	held := c.heldAgainst(ctx, k, liveRevision)
	var regressions []convert.Spec
	var old []error
	for _, s := range stored {
		err := c.check(ctx, k, []convert.Spec{s})
		if err == nil {
			continue
		}
		if !held(s) {
			old = append(old, err)
			continue
		}
		regressions = append(regressions, s)
	}
	if len(old) > 0 {
		c.log.Error(nil, "conversion check: stored CRs' specs do not round-trip, as they did not before this revision: not held against it",
			"kind", k.Resource.Kind, "revision", k.Revision, "specs", len(old), "first", old[0].Error())
	}
	return c.check(ctx, k, regressions)
}

// check round-trips specs through k's conversions (CheckSpecs): in the
// workers (checkIn), or here with converters of the caller's own.
func (c *conversions) check(ctx context.Context, k *template.Kind, specs []convert.Spec) error {
	if len(specs) == 0 {
		return nil
	}
	if c.checkIn != nil {
		return c.checkIn(ctx, k, specs)
	}
	conv, err := convert.New(k)
	if err != nil || conv == nil {
		return err
	}
	return conv.WithBudget(c.budget).CheckSpecs(specs)
}

// heldAgainst tells whether a stored spec k's conversions fail refuses k:
// when the revision of its kind converting now round-trips it (or has no
// conversions: one version), or, when none converts yet (a start), when
// the live CRD is not k's (liveRevision, its cueop.dev/revision): k never
// converted it.
func (c *conversions) heldAgainst(ctx context.Context, k *template.Kind, liveRevision string) func(convert.Spec) bool {
	prev := c.convertingKind(k)
	if prev == nil {
		held := liveRevision != k.Revision
		return func(convert.Spec) bool { return held }
	}
	return func(s convert.Spec) bool { return c.check(ctx, prev, []convert.Spec{s}) == nil }
}

// storedSpecs are the distinct specs of k's CRs, listed in every namespace
// from the API server at the storage version of the CRD it serves (crd),
// and the revision of the live CRD (its wellknown.AnnotationRevision),
// when k serves that version, a page at a time, within the bounds above.
// A list that fails ends them, logged: the check takes what was read.
// None are read while some are stored at another version and no revision
// of the kind converts yet: their reads would wait on this webhook.
func (c *conversions) storedSpecs(ctx context.Context, k *template.Kind, crd string) (_ []convert.Spec, liveRevision string) {
	if c.reader == nil {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(ctx, storedSpecsTime)
	defer cancel()
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: crd}, live); err != nil {
		if !apierrors.IsNotFound(err) {
			c.log.Error(err, "conversion check: stored CRs not read", "crd", crd)
		}
		return nil, ""
	}
	liveRevision = live.Annotations[wellknown.AnnotationRevision]
	version, others := migrate.Pending(live)
	if k.Version(version) == nil || len(others) > 0 && !c.converting(k) {
		// CRs stored at other versions read through this webhook, which
		// converts no revision of the kind yet (a start mid-migration).
		return nil, liveRevision
	}
	s := &storedSpecSet{seen: map[[sha256.Size]byte]bool{}}
	listed := 0
	defer func() {
		if s.large > 0 {
			c.log.Info("conversion check: stored specs too large to check skipped", "crd", crd, "skipped", s.large, "checked", len(s.out))
		}
	}()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(live.Spec.Group + "/" + version)
	list.SetKind(live.Spec.Names.ListKind)
	for {
		if err := c.reader.List(ctx, list, client.Limit(storedSpecsPage), client.Continue(list.GetContinue())); err != nil {
			c.log.Error(err, "conversion check: stored CRs read in part", "crd", crd, "specs", len(s.out))
			return s.out, liveRevision
		}
		for i := range list.Items {
			listed++
			if s.add(&list.Items[i], version, k.Resource.Kind) {
				return s.out, liveRevision
			}
		}
		if list.GetContinue() == "" || listed >= maxStoredListed {
			return s.out, liveRevision
		}
	}
}

// storedSpecSet are the distinct stored specs storedSpecs keeps, within
// maxStoredSpecBytes; large counts those skipped as too large.
type storedSpecSet struct {
	out          []convert.Spec
	seen         map[[sha256.Size]byte]bool
	bytes, large int
}

// add keeps the spec of cr, stored at version, of kind, unless the set
// has it already or it would exceed maxStoredSpecBytes; true once the
// set holds maxStoredSpecs.
func (s *storedSpecSet) add(cr *unstructured.Unstructured, version, kind string) (full bool) {
	spec, _ := cr.Object["spec"].(map[string]any)
	js, err := json.Marshal(spec)
	if err != nil || s.seen[sha256.Sum256(js)] {
		return false
	}
	s.seen[sha256.Sum256(js)] = true
	if s.bytes+len(js) > maxStoredSpecBytes {
		s.large++
		return false
	}
	s.bytes += len(js)
	name := cr.GetName()
	if ns := cr.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	s.out = append(s.out, convert.Spec{Version: version, Spec: spec, Source: kind + " " + name})
	return len(s.out) == maxStoredSpecs
}
