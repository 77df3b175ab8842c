// Writing a child: the server-side apply (Apply, ApplyOver), its
// create-only form for a child the caller was told is absent (ErrExists),
// reading one from the API server and dropping annotations from it (Get,
// RemoveAnnotations), and the dry runs cueop diff makes (DryRun).
//
// It must not send an apply NeedsApply (needs.go) finds would change
// nothing, nor take over an object it was not told about.

package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/kschema"
)

// DefaultFieldManager is the field manager of Applier's writes unless
// Applier.FieldManager says otherwise.
const DefaultFieldManager = "cueop"

// Action tells what Apply did.
type Action string

// What Apply did, and, for events and logs, what Prune and Recreate do.
const (
	Created   Action = "created"
	Updated   Action = "updated"
	Unchanged Action = "unchanged"
	Pruned    Action = "pruned"
	Recreated Action = "recreated"
)

// Applier writes children with server-side apply. Its zero value, given a
// Client, is ready to use; it is safe for concurrent use and must not be
// copied after first use.
type Applier struct {
	// Client writes the children.
	Client client.Client
	// Reader reads an object live (Get), not from a cache; nil means
	// Client.
	Reader client.Reader
	// FieldManager owns the applied fields; empty means DefaultFieldManager.
	FieldManager string
	// TypeConverter gives the schema of kinds that are not built in (for
	// example one built from the API server's OpenAPI). Nil means a schema
	// deduced from the object itself; see the package documentation.
	TypeConverter managedfields.TypeConverter
	// Responses, when set, sends the applies asking for the object's
	// metadata only in the answer (metadata.go); nil sends them through
	// Client, which decodes the whole object.
	Responses *MetadataResponses

	memo memo
}

func (a *Applier) fieldManager() string {
	if a.FieldManager == "" {
		return DefaultFieldManager
	}
	return a.FieldManager
}

// Apply makes live match desired with one server-side apply, or sends no
// request when NeedsApply says nothing would change. live is the object as
// the informer cache holds it, nil when absent; it must be an object the
// caller controls. desired is not modified. The result is Created when
// live is nil, Updated or Unchanged otherwise.
//
// With live nil the apply only creates: when an object of that name exists
// (another's, or the caller's that its cache has not seen) it is left
// unchanged and the error wraps ErrExists. The caller decides, from Get,
// whether to apply over it.
func (a *Applier) Apply(ctx context.Context, desired, live *unstructured.Unstructured) (Action, error) {
	return a.apply(ctx, desired, live, false)
}

// ApplyOver is Apply of desired over live, an object read by Get whose
// state a decision rests on (an adoption: a released child whose proof
// verified). The apply carries live's resourceVersion: when the object of
// the name changed since it was read, or was deleted and made again, the
// API server refuses it (a Conflict) and nothing is written, so that what
// is taken over is the object checked.
func (a *Applier) ApplyOver(ctx context.Context, desired, live *unstructured.Unstructured) (Action, error) {
	if live == nil || live.GetResourceVersion() == "" {
		return "", fmt.Errorf("%s apply failed: no live object and resourceVersion to apply over", subject(desired))
	}
	return a.apply(ctx, desired, live, true)
}

func (a *Applier) apply(ctx context.Context, desired, live *unstructured.Unstructured, over bool) (Action, error) {
	p, err := a.plan(desired, live)
	if err != nil {
		return "", fmt.Errorf("%s apply failed: %w", subject(desired), err)
	}
	if p.why == "" {
		return Unchanged, nil
	}
	if live == nil {
		guardCreate(p.object)
	}
	if over {
		p.object.Object["metadata"].(map[string]any)["resourceVersion"] = live.GetResourceVersion()
	}
	ans, err := a.send(ctx, p.object)
	if err != nil && live == nil && createRefused(p.object, err) != nil {
		return "", createRefused(p.object, err)
	}
	if err != nil {
		return "", err
	}
	if !p.skew && kschema.Known(p.object) {
		if k, ok := appliedKey(p.hash, ans); ok { // metadata.go
			a.memo.add(k)
		}
	}
	if live == nil {
		return Created, nil
	}
	if rv := ans.resourceVersion; p.skew && rv != "" && rv == live.GetResourceVersion() {
		// The server kept live as it was: in sync, and remembered as such,
		// so that the same live state sends no request again.
		if p.memoable {
			a.memo.add(p.key)
		}
		return Unchanged, nil
	}
	return Updated, nil
}

// send applies obj, forcing ownership of every field it holds, and returns
// what the API server's answer says of the object: its resourceVersion,
// and with Responses its uid and the applied entry of the field manager.
func (a *Applier) send(ctx context.Context, obj *unstructured.Unstructured) (answered, error) {
	if a.Responses != nil {
		ans, err := a.Responses.apply(ctx, obj, a.fieldManager())
		if err != nil {
			return answered{}, fmt.Errorf("%s apply failed: %w", subject(obj), err)
		}
		return ans, nil
	}
	// Apply decodes the response into the object it is given; a fresh
	// Unstructured keeps the maps obj shares with the caller's object intact.
	out := &unstructured.Unstructured{Object: obj.Object}
	err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(out),
		client.FieldOwner(a.fieldManager()), client.ForceOwnership)
	if err != nil {
		return answered{}, fmt.Errorf("%s apply failed: %w", subject(obj), err)
	}
	return answered{resourceVersion: out.GetResourceVersion()}, nil
}

// subject names obj in errors: "Pod ns/name".
func subject(obj *unstructured.Unstructured) string {
	if obj == nil {
		return "<nil>"
	}
	kind := obj.GetKind()
	if kind == "" {
		kind = "object"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

// ErrExists is what Apply returns, wrapped, when it was told a child is
// absent (live nil) and an object of that name exists: it sent a
// create-only apply, which the API server refused, and changed nothing.
var ErrExists = errors.New("an object of this name exists")

// IsExists reports whether err is, or wraps, ErrExists.
func IsExists(err error) bool { return errors.Is(err, ErrExists) }

// createOnly is the resourceVersion Apply sends with a child it believes
// absent: no object can have it (the largest 64-bit number). The API server
// checks a resourceVersion sent with an apply against the object that
// exists (a Conflict when it differs) and wipes it when the apply creates
// the object, so the apply creates the child or changes nothing: cueop
// never takes over an object it was not told about, and it costs no request
// more than the apply.
const createOnly = "18446744073709551615"

// guardCreate makes obj, as stamp returned it (its metadata a copy),
// create-only.
func guardCreate(obj *unstructured.Unstructured) {
	obj.Object["metadata"].(map[string]any)["resourceVersion"] = createOnly
}

// createRefused is the error of a create-only apply of obj the API server
// refused with err because an object of that name exists, nil for any
// other error.
func createRefused(obj *unstructured.Unstructured, err error) error {
	if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		return nil
	}
	return fmt.Errorf("%s: %w: the create-only apply changed nothing", subject(obj), ErrExists)
}

// Get reads desired's object (same apiVersion, kind, namespace and name)
// from the API server through Reader, not a cache: the object Apply found
// existing. It returns nil when there is none.
func (a *Applier) Get(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	err := a.reader().Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s get failed: %w", subject(desired), err)
	}
	return live, nil
}

func (a *Applier) reader() client.Reader {
	if a.Reader != nil {
		return a.Reader
	}
	return a.Client
}

// RemoveAnnotations removes the annotations keys from live, an object cueop
// controls, with a merge patch guarded by its uid (the patch fails on
// another object that took its name). Nothing is sent when live has none of
// them.
func (a *Applier) RemoveAnnotations(ctx context.Context, live *unstructured.Unstructured, keys ...string) error {
	ann := map[string]any{}
	for _, k := range keys {
		if _, ok := live.GetAnnotations()[k]; ok {
			ann[k] = nil
		}
	}
	if len(ann) == 0 {
		return nil
	}
	body := map[string]any{"metadata": map[string]any{"uid": string(live.GetUID()), "annotations": ann}}
	if err := a.patch(ctx, live.DeepCopy(), types.MergePatchType, body, a.fieldManager()+"-release"); err != nil {
		return fmt.Errorf("%s remove annotations %v failed: %w", subject(live), keys, err)
	}
	return nil
}

// DryRun sends the apply Apply would send for desired (stamped, forcing
// ownership, as the applier's field manager) with dryRun=All: the API
// server runs defaulting, admission and validation and answers with the
// object as it would be, and stores nothing. name, when not empty, applies
// the object under that name instead (an object that does not exist, to see
// what creating desired anew would give); the answer is renamed back.
func (a *Applier) DryRun(ctx context.Context, desired *unstructured.Unstructured, name string) (*unstructured.Unstructured, error) {
	return a.dryRun(ctx, desired, name, false)
}

// DryRunCreate is DryRun of the create-only apply Apply sends for a child
// it is told is absent: when an object of that name exists, the error
// wraps ErrExists.
func (a *Applier) DryRunCreate(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.dryRun(ctx, desired, "", true)
}

func (a *Applier) dryRun(ctx context.Context, desired *unstructured.Unstructured, name string, create bool) (*unstructured.Unstructured, error) {
	obj, _, err := stamp(desired)
	if err != nil {
		return nil, fmt.Errorf("%s dry-run apply failed: %w", subject(desired), err)
	}
	if name != "" {
		meta := obj.Object["metadata"].(map[string]any)
		meta["name"] = name
	}
	if create {
		guardCreate(obj)
	}
	out := &unstructured.Unstructured{Object: obj.Object}
	err = a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(out),
		client.FieldOwner(a.fieldManager()), client.ForceOwnership, client.DryRunAll)
	if err != nil && create && createRefused(desired, err) != nil {
		return nil, createRefused(desired, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s dry-run apply failed: %w", subject(desired), err)
	}
	if name != "" {
		out.SetName(desired.GetName())
	}
	return out, nil
}
