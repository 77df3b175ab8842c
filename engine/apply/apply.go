package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// unchanged and the error wraps ErrExists (create.go). The caller decides,
// from Get, whether to apply over it.
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
		if k, ok := appliedKey(p.hash, ans); ok { // memo.go
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
