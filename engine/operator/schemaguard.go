package operator

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
)

// guardSchema compares the CRD the cluster serves (live; nil when there is
// none) with next, the CRD of k, before next is applied. A breaking change
// (schemacompat) to a kind with stored CRs is refused with a
// *schemacompat.Refusal naming each change, its CUE position and the stored
// CRs it touches; a kind with no stored CR takes it, with a warning Event
// on the CRD.
func (o *Operator) guardSchema(ctx context.Context, k *template.Kind, next *apiextensionsv1.CustomResourceDefinition, live *unstructured.Unstructured) error {
	if live == nil {
		return nil
	}
	old := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, old); err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: %w", next.Name, err)
	}
	breaking := schemacompat.Breaking(schemacompat.CompareCRDs(old, next))
	if len(breaking) == 0 {
		return nil
	}
	crdgen.Locate(k, breaking)
	stored, total, err := o.storedCRs(ctx, old, breaking)
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: count stored CRs: %w", next.Name, err)
	}
	schemacompat.Count(breaking, stored)
	r := &schemacompat.Refusal{Kind: k.Resource.Kind + "." + k.Resource.Group, Changes: breaking, Stored: total}
	if total > 0 {
		return r
	}
	msg := "breaking schema change taken, as no CR of the kind is stored:" + r.Details()
	o.log.Info(msg, "kind", k.Resource.Kind, "revision", k.Revision)
	o.recorder.Event(live, corev1.EventTypeWarning, "BreakingSchemaChange", msg)
	return nil
}

// storedCRs lists, at each version a change is to, the CRs of crd's kind
// in every namespace, as the API server serves them at that version, and
// returns them with their number.
func (o *Operator) storedCRs(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, cs []schemacompat.Change) (map[string][]map[string]any, int, error) {
	out := map[string][]map[string]any{}
	total := 0
	for _, c := range cs {
		if _, done := out[c.Version]; done {
			continue
		}
		out[c.Version] = []map[string]any{}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(crd.Spec.Group + "/" + c.Version)
		list.SetKind(crd.Spec.Names.ListKind)
		for {
			if err := o.mgr.GetAPIReader().List(ctx, list, client.Limit(500), client.Continue(list.GetContinue())); err != nil {
				return nil, 0, err
			}
			for _, item := range list.Items {
				out[c.Version] = append(out[c.Version], item.Object)
			}
			if list.GetContinue() == "" {
				break
			}
		}
		total = max(total, len(out[c.Version]))
	}
	return out, total, nil
}

// schemaRefused reports a refused schema change where template errors
// show: an ERROR log line, cueop_template_load_errors_total, and a
// TemplateError Event on the kind's CRD; the kind's refusal gauge is set
// until a revision of the kind is served again (schemaAccepted). Other
// errors are returned as they are. The caller holds o.mu.
func (o *Operator) schemaRefused(ctx context.Context, k *template.Kind, crdName string, err error) error {
	var r *schemacompat.Refusal
	if !errors.As(err, &r) {
		return err
	}
	serving := "no revision of the kind serves yet"
	if kc, ok := o.kinds[k.Name]; ok {
		serving = "revision " + kc.rec.Kind().Revision + " keeps serving"
	}
	msg := fmt.Sprintf("template of %s (revision %s) refused: the CRD is left as it is and %s: %v", k.Name, k.Revision, serving, r)
	o.log.Error(nil, msg, "kind", k.Resource.Kind)
	o.metrics.loadError()
	o.metrics.schemaRefused(k, true)
	o.refused[k.Name] = true
	o.crdEvent(ctx, crdName, "TemplateError", msg)
	return fmt.Errorf("kind %s: %w", k.Name, err)
}

// schemaAccepted clears the refusal of k's kind, once a revision of it
// (a new one, or the one that kept serving) is served. The caller holds
// o.mu.
func (o *Operator) schemaAccepted(k *template.Kind) {
	if !o.refused[k.Name] {
		return
	}
	delete(o.refused, k.Name)
	o.metrics.schemaRefused(k, false)
	o.log.Info("schema change no longer refused: the kind serves revision "+k.Revision, "kind", k.Resource.Kind)
}
