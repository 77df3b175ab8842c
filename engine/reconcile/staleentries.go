package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// unservedVersion is how the API server refuses a write of a CR with a
// managedFields entry at a version its CRD no longer serves, the version
// after it.
const unservedVersion = "request to convert CR to an invalid group/version: "

// repairEntries, when err (a status write) is the API server's refusal of
// a CR with a managedFields entry at a version not served, moves the
// CR's entries at versions not served (the one the error names and those
// the kind does not declare) to the version it is read at
// (migrate.UnservedFields), read from the API server (Reconciler.Live:
// the cache keeps only cueop's entry), by a merge patch of the CR with
// the resourceVersion it was read at; the entries at served versions are
// left alone. It tells whether that wrote, for the status write to be
// retried once; a conflict or any other failure changes nothing and
// leaves the write's error to its backoff.
func (w statusWriter) repairEntries(ctx context.Context, k *template.Kind, cr0 *unstructured.Unstructured, err error) bool {
	var status apierrors.APIStatus
	if w.live == nil || !errors.As(err, &status) {
		return false
	}
	msg := status.Status().Message
	i := strings.Index(msg, unservedVersion)
	if i < 0 {
		return false
	}
	named := strings.Fields(msg[i+len(unservedVersion):])
	gv := cr0.GroupVersionKind().GroupVersion()
	served := map[string]bool{}
	for _, v := range k.Versions {
		served[schema.GroupVersion{Group: gv.Group, Version: v.Name}.String()] = true
	}
	if len(named) > 0 {
		delete(served, strings.TrimRight(named[0], `".,;`))
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(cr0.GroupVersionKind())
	if gerr := w.live.Get(ctx, client.ObjectKeyFromObject(cr0), cr); gerr != nil {
		w.log.Error(gerr, objectText(cr0)+": not read for its managedFields at versions not served")
		return false
	}
	mfs, stale := migrate.UnservedFields(cr.Object, cr.GetManagedFields(), gv.String(), func(v string) bool { return served[v] })
	if !stale {
		return false
	}
	if len(mfs) == 0 {
		mfs = []metav1.ManagedFieldsEntry{{}} // an empty list keeps the entries there are
	}
	patch, perr := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cr.GetResourceVersion(), "managedFields": mfs}})
	if perr != nil {
		return false
	}
	target := cr.DeepCopy()
	if perr := w.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(w.manager)); perr != nil {
		w.log.Error(perr, objectText(cr0)+": managedFields at versions not served not moved to "+gv.Version)
		return false
	}
	if w.recorder != nil {
		w.recorder.Event(cr0, corev1.EventTypeNormal, wellknown.ReasonManagedFieldsRepaired,
			fmt.Sprintf("managedFields entries at versions no longer served moved to %s, for the status to be written", gv.Version))
	}
	return true
}
