package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// A kind is held by one operator instance (Options.Instance: one install,
// its replicas and shards alike), recorded on the kind's CRD by the
// annotation wellknown.AnnotationOperator, next to the package it was applied for
// (wellknown.AnnotationPackage, loader.go) and the templates of the operator that
// applied it last (wellknown.AnnotationTemplates). The CRD is the record because
// only cluster administrators and operators may write CRDs; a Template or
// a CR is written by many more.
//
// An operator does not serve, and does not write the CRD of, a kind whose
// CRD names another instance: the kind's serve fails (heldError, reason
// HeldByAnotherOperator, in the log and the metrics; the Template is the
// holder's to write, templatedrift.go) and its other kinds serve. A kind
// this operator served until another instance took its CRD stops being
// reconciled when it sees the CRD change (watchHolders: a reload). Taking a kind over is the
// administrator's choice (Options.TakeOver, `cueop run --take-over`), as
// when an install moves: the CRD then records the new instance.
//
// A CRD that names no instance (applied by an administrator from crds/,
// or by a cueop before the record) is held by nobody: an operator serving
// it records itself when it applies it (--install-crds), or when told to
// take it over.

// DefaultInstance is the instance name of an operator given none:
// identity.DefaultNamespace/cueop, the namespace and name of the install
// config/ makes.
const DefaultInstance = identity.DefaultNamespace + "/cueop"

// Instance is the name of the operator instance this operator is.
func (o *Operator) Instance() string { return o.crds.instance }

// takesOver tells whether the administrator told this operator to take k
// over from whichever instance holds it (by Kind.group or CRD name).
func (c *crdWriter) takesOver(k *template.Kind) bool {
	return slices.Contains(c.takeOver, k.Resource.ID()) || slices.Contains(c.takeOver, k.Resource.CRDName())
}

// heldError is a kind's serve refused because another operator instance
// holds its CRD: not retried (it holds until an administrator moves it).
type heldError struct {
	crd, kind, holder, instance string
}

func (e heldError) Error() string {
	return fmt.Sprintf("kind %s: its CRD %s is held by the operator %s (annotation %s): this operator (%s) neither serves it nor writes its CRD; to move the kind here, run this operator with --take-over=%s",
		e.kind, e.crd, e.holder, wellknown.AnnotationOperator, e.instance, e.kind)
}

// holderOf is the instance a CRD names ("" when none) and the templates
// it was applied from last; found is false when there is no such CRD.
func (c *crdWriter) holderOf(ctx context.Context, crdName string) (instance, templates string, found bool, err error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.reader.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", false, nil
		}
		return "", "", false, fmt.Errorf("CustomResourceDefinition %s: who holds it: %w", crdName, err)
	}
	ann := crd.GetAnnotations()
	return ann[wellknown.AnnotationOperator], ann[wellknown.AnnotationTemplates], true, nil
}

// checkHolder answers a heldError when k's CRD names another instance and
// k is not taken over (held). A kind taken over whose CRD cueop does not
// apply (--install-crds=false) is recorded on its CRD here. The caller
// holds lc.mu.
func (lc *kindLifecycle) checkHolder(ctx context.Context, k *template.Kind, r *kindRecord) error {
	crdName := k.Resource.CRDName()
	holder, _, found, err := lc.crds.holderOf(ctx, crdName)
	if err != nil || !found || holder == "" || holder == lc.crds.instance {
		return err
	}
	if !lc.crds.takesOver(k) {
		return lc.held(ctx, k, r, holder)
	}
	lc.log.Info("taking the kind over from another operator (--take-over)", "kind", k.Resource.ID(), "crd", crdName, "from", holder, "instance", lc.crds.instance)
	if lc.installCRDs {
		return nil // the CRD's apply records this instance
	}
	return lc.crds.recordHolder(ctx, crdName, k.Name)
}

// held records k's kind, r, held by the instance holder: it stops waiting
// for its CRD, and its controller stops (taken over by another operator).
// It answers the heldError, logged once per holder. The caller holds
// lc.mu.
func (lc *kindLifecycle) held(ctx context.Context, k *template.Kind, r *kindRecord, holder string) error {
	herr := heldError{crd: k.Resource.CRDName(), kind: k.Resource.ID(), holder: holder, instance: lc.crds.instance}
	if r.heldBy != holder { // once per holder, not at every reload
		lc.log.Error(herr, "kind not served: another operator holds it", "kind", k.Resource.ID(), "crd", herr.crd, "holder", holder, "instance", lc.crds.instance)
	}
	lc.stopWaiting(k.Name, r)
	if kc := r.serving; kc != nil {
		r.serving = nil
		lc.stop(ctx, k.Name, kc)
	}
	lc.enter(r, k, phaseHeld)
	r.heldBy = holder
	return herr
}

// recordHolder writes this instance, its templates and the package pkg
// on the CRD crdName.
func (c *crdWriter) recordHolder(ctx context.Context, crdName, pkg string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		wellknown.AnnotationOperator: c.instance, wellknown.AnnotationTemplates: c.mark, wellknown.AnnotationPackage: pkg}}})
	if err != nil {
		return err
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.SetName(crdName)
	if err := c.client.Patch(ctx, crd, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: record the operator %s: %w", crdName, c.instance, err)
	}
	return nil
}

// heldElsewhereNow are the packages not served because another operator
// instance holds their kind, with that instance.
func (lc *kindLifecycle) heldElsewhereNow() map[string]string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	out := map[string]string{}
	for name, r := range lc.records {
		if r.phase == phaseHeld {
			out[name] = r.heldBy
		}
	}
	return out
}

// watchHolders follows the CRDs of the kinds served: one another instance
// takes over (its annotation names that instance) stops being served here
// at once, by a reload, instead of at the next edit of the templates (a
// static templates directory may never change) while both instances
// reconcile its CRs. A kind this operator is told to take over is left to
// its next start: two installs both told to take one kind would
// otherwise take it from each other without end.
func (lc *kindLifecycle) watchHolders(ctx context.Context) {
	mc, err := metadata.NewForConfigAndClient(lc.run.mgr.GetConfig(), lc.run.mgr.GetHTTPClient())
	if err != nil {
		lc.log.Error(err, "kinds taken over by another operator: not followed; they stop serving here at the next reload")
		return
	}
	gvr := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	inf := metadatainformer.NewFilteredMetadataInformer(mc, gvr, "", 0, toolscache.Indexers{}, nil).Informer()
	kick := make(chan string, 1)
	on := func(obj any) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		if h := m.GetAnnotations()[wellknown.AnnotationOperator]; h == "" || h == lc.crds.instance || !lc.servesHeld(m.GetName()) {
			return
		}
		select {
		case kick <- m.GetName():
		default: // a reload is due already
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }}); err != nil {
		lc.log.Error(err, "kinds taken over by another operator: not followed")
		return
	}
	go inf.Run(ctx.Done())
	for {
		select {
		case <-ctx.Done():
			return
		case crd := <-kick:
			lc.log.Info("a kind served here was taken over by another operator: reloading to stop serving it", "crd", crd)
			if err := lc.reload(ctx); err != nil && ctx.Err() == nil {
				lc.log.Error(err, "reload after a kind was taken over")
			}
		}
	}
}

// servesHeld tells whether this operator serves the kind of CRD crdName,
// not told to take it over.
func (lc *kindLifecycle) servesHeld(crdName string) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, kc := range lc.records.controllers() {
		if kc.crdName == crdName {
			return !lc.crds.takesOver(kc.rec.Kind())
		}
	}
	return false
}
