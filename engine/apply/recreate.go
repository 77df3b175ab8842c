package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// immutableMarks are what the API server's validation says when an update
// changes a field that cannot change after creation.
var immutableMarks = []string{
	"immutable",                   // "field is immutable" (selectors, Job template, ...), PVC spec, ConfigMap data with immutable: true
	"may not change",              // "pod updates may not change fields other than", Service clusterIPs "may not change once set"
	"for fields other than",       // StatefulSet spec
	"cannot be modified once set", // declarative validation of update-once fields
}

// IsImmutable reports whether err, or an error it wraps, is the API server
// refusing a change as immutable (422 Invalid): such a change needs
// Recreate.
func IsImmutable(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	st := status.Status()
	texts := []string{st.Message}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			texts = append(texts, c.Message)
		}
	}
	for _, t := range texts {
		for _, m := range immutableMarks {
			if strings.Contains(t, m) {
				return true
			}
		}
	}
	return false
}

// Replace deletes live so that the next apply creates it anew, as Prune
// does, but its dependents are orphaned when orphan is set (kubectl delete
// --cascade=orphan): the new object adopts those its selector matches.
func (a *Applier) Replace(ctx context.Context, live *unstructured.Unstructured, orphan bool) error {
	p := metav1.DeletePropagationBackground
	if orphan {
		p = metav1.DeletePropagationOrphan
	}
	if err := a.delete(ctx, live, p); err != nil {
		return fmt.Errorf("%s delete to recreate failed: %w", subject(live), err)
	}
	return nil
}

// ImmutableFields are the fields the API server names in err as immutable,
// each with the first line of its message, or err's message when it names
// none.
func ImmutableFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return []string{err.Error()}
	}
	st := status.Status()
	var out []string
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Field != "" && hasImmutableMark(c.Message) {
				out = append(out, c.Field+": "+firstLine(c.Message))
			}
		}
	}
	if len(out) == 0 {
		out = []string{firstLine(st.Message)}
	}
	return out
}

func hasImmutableMark(s string) bool {
	for _, m := range immutableMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	const most = 300
	if len(s) > most {
		s = s[:most] + "..."
	}
	return s
}

// Recreate replaces live with desired: it deletes live (by UID, with
// background propagation), waits until no object of that name with live's
// UID is left, polling with a short backoff bounded by ctx, then creates
// desired with an apply. Give ctx a deadline: a Pod on a node leaves only
// once its kubelet confirms, after its grace period.
func (a *Applier) Recreate(ctx context.Context, desired, live *unstructured.Unstructured) error {
	if err := a.recreate(ctx, desired, live); err != nil {
		return fmt.Errorf("%s recreate failed: %w", subject(desired), err)
	}
	return nil
}

func (a *Applier) recreate(ctx context.Context, desired, live *unstructured.Unstructured) error {
	obj, _, err := stamp(desired)
	if err != nil {
		return err
	}
	if live != nil {
		if err := a.delete(ctx, live, metav1.DeletePropagationBackground); err != nil {
			return err
		}
		if err := a.waitGone(ctx, live); err != nil {
			return err
		}
	}
	_, err = a.send(ctx, obj)
	return err
}

// waitGone polls until live's name is free or held by another UID.
func (a *Applier) waitGone(ctx context.Context, live *unstructured.Unstructured) error {
	const first, most = 20 * time.Millisecond, time.Second
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(live.GroupVersionKind())
	for delay := first; ; delay = min(2*delay, most) {
		err := a.Client.Get(ctx, client.ObjectKeyFromObject(live), cur)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case cur.GetUID() != live.GetUID():
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for uid %s to go: %w", live.GetUID(), context.Cause(ctx))
		case <-time.After(delay):
		}
	}
}
