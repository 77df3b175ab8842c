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
// (wellknown.AnnotationPackage, claims.go) and the templates of the operator that
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
func (o *Operator) Instance() string {
	if o.opts.Instance != "" {
		return o.opts.Instance
	}
	return DefaultInstance
}

// takesOver tells whether the administrator told this operator to take k
// over from whichever instance holds it (by Kind.group or CRD name).
func (o *Operator) takesOver(k *template.Kind) bool {
	return slices.Contains(o.opts.TakeOver, k.Resource.ID()) || slices.Contains(o.opts.TakeOver, k.Resource.CRDName())
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
func (o *Operator) holderOf(ctx context.Context, crdName string) (instance, templates string, found bool, err error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := o.mgr.GetAPIReader().Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", false, nil
		}
		return "", "", false, fmt.Errorf("CustomResourceDefinition %s: who holds it: %w", crdName, err)
	}
	ann := crd.GetAnnotations()
	return ann[wellknown.AnnotationOperator], ann[wellknown.AnnotationTemplates], true, nil
}

// checkHolder answers a heldError when k's CRD names another instance and
// k is not taken over. A kind taken over whose CRD cueop does not apply
// (--install-crds=false) is recorded on its CRD here. The caller holds
// o.mu.
func (o *Operator) checkHolder(ctx context.Context, k *template.Kind) error {
	crdName := k.Resource.CRDName()
	holder, _, found, err := o.holderOf(ctx, crdName)
	if err != nil || !found || holder == "" || holder == o.Instance() {
		delete(o.heldElsewhere, k.Name)
		return err
	}
	if !o.takesOver(k) {
		herr := heldError{crd: crdName, kind: k.Resource.ID(), holder: holder, instance: o.Instance()}
		if o.heldElsewhere[k.Name] != holder { // once per holder, not at every reload
			o.log.Error(herr, "kind not served: another operator holds it", "kind", k.Resource.ID(), "crd", crdName, "holder", holder, "instance", o.Instance())
		}
		o.heldElsewhere[k.Name] = holder
		return herr
	}
	delete(o.heldElsewhere, k.Name)
	o.log.Info("taking the kind over from another operator (--take-over)", "kind", k.Resource.ID(), "crd", crdName, "from", holder, "instance", o.Instance())
	if o.opts.InstallCRDs {
		return nil // the CRD's apply records this instance
	}
	return o.recordHolder(ctx, crdName, k.Name)
}

// recordHolder writes this instance, its templates and the package pkg
// on the CRD crdName.
func (o *Operator) recordHolder(ctx context.Context, crdName, pkg string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		wellknown.AnnotationOperator: o.Instance(), wellknown.AnnotationTemplates: o.TemplatesMark(), wellknown.AnnotationPackage: pkg}}})
	if err != nil {
		return err
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.SetName(crdName)
	if err := o.mgr.GetClient().Patch(ctx, crd, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: record the operator %s: %w", crdName, o.Instance(), err)
	}
	return nil
}

// HeldElsewhere are the packages this operator does not serve because
// another operator instance holds their kind, with that instance.
func (o *Operator) HeldElsewhere() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]string, len(o.heldElsewhere))
	for k, v := range o.heldElsewhere {
		out[k] = v
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
func (o *Operator) watchHolders(ctx context.Context) {
	mc, err := metadata.NewForConfigAndClient(o.mgr.GetConfig(), o.mgr.GetHTTPClient())
	if err != nil {
		o.log.Error(err, "kinds taken over by another operator: not followed; they stop serving here at the next reload")
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
		if h := m.GetAnnotations()[wellknown.AnnotationOperator]; h == "" || h == o.Instance() || !o.servesHeld(m.GetName()) {
			return
		}
		select {
		case kick <- m.GetName():
		default: // a reload is due already
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }}); err != nil {
		o.log.Error(err, "kinds taken over by another operator: not followed")
		return
	}
	go inf.Run(ctx.Done())
	for {
		select {
		case <-ctx.Done():
			return
		case crd := <-kick:
			o.log.Info("a kind served here was taken over by another operator: reloading to stop serving it", "crd", crd)
			if err := o.reload(ctx); err != nil && ctx.Err() == nil {
				o.log.Error(err, "reload after a kind was taken over")
			}
		}
	}
}

// servesHeld tells whether this operator serves the kind of CRD crdName,
// not told to take it over.
func (o *Operator) servesHeld(crdName string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, kc := range o.kinds {
		if kc.crdName == crdName {
			return !o.takesOver(kc.rec.Kind())
		}
	}
	return false
}
