// Stage 3, decide: a CR whose status records a convergence at the digest of
// these very inputs and children (StatusInputsDigest) is settled: nothing
// is rendered, applied or written.
//
// It must not write anything: a settled CR costs no API request.

package reconcile

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// StatusInputsDigest is the status field in which cueop records, with each
// status write of a converged CR, what that status was computed from: the
// digest of the render's inputs (render.Inputs.Digest: template revision,
// spec, the metadata and observed paths the template reads, the referenced
// objects' versions), of cueop's finalizers on the CR, of the live children
// as cueop left them (identity, applied hash, cueop's field set; their
// kstatus when Ready was the engine's default: the kind has no `ready`, or
// the render gave none for this CR), of the render policy and child
// labels, and of the cueop build.
//
// A reconcile that finds the CR's status converged at the current
// generation and revision and this digest equal to the one recorded is
// settled: a render would give the same children and status, every child
// is as cueop applied it (a drift changes cueop's field set or the applied
// hash), so it renders nothing, applies nothing and writes nothing. This is
// what keeps a restarted process's resync from rendering every CR: the
// render memo (rendering.go) lives in memory only.
//
// The digest is written only in a status write that happens anyway (never
// a write of its own): when the inputs change and the status does not, the
// recorded digest stays behind and the next reconcile renders as before.
const StatusInputsDigest = template.StatusInputsDigest

// digestFormat changes when what the digest covers changes.
const digestFormat = "cueop-inputs-2" // 2: the kstatus of a render whose Ready was the default

// inputs are what a CR's settled check (stage 3) and the digest its
// status records are computed from.
type inputs struct {
	kind       *template.Kind
	cr         *unstructured.Unstructured
	v          *view // what observe saw
	referenced map[string]render.Referenced
	stamp      string // Reconciler.stamp
	manager    string // cueop's field manager
}

// settled is true when the CR's status records a convergence at exactly
// the inputs and children it has now (see StatusInputsDigest).
func (in inputs) settled() bool {
	if !maySettle(in.cr, in.kind) {
		return false
	}
	recorded, _, _ := unstructured.NestedString(in.cr.Object, "status", StatusInputsDigest)
	d, ok := in.recorded(strings.HasPrefix(recorded, byDefaultPrefix))
	return ok && d == recorded
}

// byDefaultPrefix marks a recorded digest that covers the children's
// kstatus because the render's Ready was the engine's default, though the
// kind has `ready` (under a condition the CR did not meet). A kind without
// `ready` always covers it, unmarked.
const byDefaultPrefix = "default:"

// recorded is the digest to record, or to compare with the one
// recorded, for a render whose Ready was the default (byDefault) or not.
// The children's kstatus is computed from their whole objects
// (observe.go).
func (in inputs) recorded(byDefault bool) (string, bool) {
	if !in.kind.Value.LookupPath(template.PathReady).Exists() {
		return in.digest(true)
	}
	if !byDefault {
		return in.digest(false)
	}
	d, ok := in.digest(true)
	return byDefaultPrefix + d, ok
}

// maySettle is true when cr's status records a convergence at its current
// generation and k's revision, with the inputs' digest: settled then
// compares the digest.
func maySettle(cr *unstructured.Unstructured, k *template.Kind) bool {
	recorded, _, _ := unstructured.NestedString(cr.Object, "status", StatusInputsDigest)
	return recorded != "" && convergedStatus(cr, k.Revision)
}

// convergedStatus is true when cr's status says it converged at its
// current generation with the template revision rev.
func convergedStatus(cr *unstructured.Unstructured, rev string) bool {
	st, _ := cr.Object["status"].(map[string]any)
	if got, _ := st["revision"].(string); got != rev || rev == "" {
		return false
	}
	gen := cr.GetGeneration()
	if og, _, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); og != gen {
		return false
	}
	conds := oldConditions(st)
	for _, want := range []metav1.Condition{
		{Type: wellknown.ConditionReady, Status: metav1.ConditionTrue, Reason: wellknown.ReasonReady},
		{Type: wellknown.ConditionReconciling, Status: metav1.ConditionFalse, Reason: wellknown.ReasonConverged},
		{Type: wellknown.ConditionStalled, Status: metav1.ConditionFalse, Reason: wellknown.ReasonConverged},
	} {
		c := meta.FindStatusCondition(conds, want.Type)
		if c == nil || c.Status != want.Status || c.Reason != want.Reason || c.ObservedGeneration != gen {
			return false
		}
	}
	return true
}

// digest is the digest StatusInputsDigest describes, hex encoded, with the
// children's kstatus or without.
func (in inputs) digest(kstatus bool) (string, bool) {
	ri := render.Inputs{Kind: in.kind, Parent: in.cr, Observed: in.v.observed, Referenced: in.referenced}
	d, ok := ri.Digest()
	if !ok {
		return "", false
	}
	h := sha256.New()
	h.Write(d[:])
	writeField(h, in.stamp)
	for _, f := range Finalizers { // deletion.go: a reconcile puts them back
		writeField(h, fmt.Sprint(f, slices.Contains(in.cr.GetFinalizers(), f)))
	}
	if !in.childrenFingerprint(h, kstatus) {
		return "", false
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// childrenFingerprint writes to h, for every child the CR controls in a
// fixed order, what drift detection compares: its identity, its applied
// hash and cueop's field set; and with kstatus its kstatus, of the whole
// child.
func (in inputs) childrenFingerprint(h hash.Hash, kstatus bool) bool {
	all := slices.Clone(in.v.owned.all)
	slices.SortFunc(all, func(a, b *unstructured.Unstructured) int { return strings.Compare(childName(a), childName(b)) })
	for _, o := range all {
		fields, ok := managerFields(o, in.manager)
		if !ok {
			return false
		}
		writeField(h, childName(o))
		writeField(h, string(o.GetUID()))
		writeField(h, o.GetAnnotations()[wellknown.AnnotationAppliedHash])
		writeField(h, fields)
		if kstatus {
			res, err := status.Compute(in.v.whole(o))
			if err != nil {
				return false
			}
			writeField(h, string(res.Status))
		}
	}
	return true
}

func childName(o *unstructured.Unstructured) string {
	return o.GetAPIVersion() + " " + o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// managerFields is manager's field set of o itself (not of a subresource),
// as text: the cache keeps fieldsV1 as JSON text (observe.go), an object
// read whole as a map.
func managerFields(o *unstructured.Unstructured, manager string) (string, bool) {
	entries, _, _ := unstructured.NestedSlice(o.Object, "metadata", "managedFields")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if m["manager"] != manager || m["subresource"] != nil && m["subresource"] != "" {
			continue
		}
		switch f := m["fieldsV1"].(type) {
		case string:
			return f, true
		case nil:
			return "", true
		default:
			b, err := json.Marshal(f)
			return string(b), err == nil
		}
	}
	return "", true
}

func writeField(h hash.Hash, s string) {
	h.Write(binary.AppendUvarint(nil, uint64(len(s))))
	h.Write([]byte(s))
}

// stamp stands for what renders the same inputs differently besides the
// template: the cueop build, the render policy and the labels set on every
// child.
func (r *Reconciler) stamp() string {
	r.stampOnce.Do(func() {
		o := r.Options
		labels, _ := json.Marshal(r.ChildLabels) // sorted keys
		r.stampText = fmt.Sprintf("%s\n%s\n%v|%v|%v|%d\n%s", digestFormat, buildStamp(),
			o.AllowedKinds, o.ReadableKinds, o.DataKinds, o.MaxChildren, labels)
	})
	return r.stampText
}

// buildStamp names the cueop build: a new build may render differently.
var buildStamp = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	s := bi.Main.Path + "@" + bi.Main.Version
	for _, kv := range bi.Settings {
		if kv.Key == "vcs.revision" || kv.Key == "vcs.modified" {
			s += " " + kv.Key + "=" + kv.Value
		}
	}
	return s
})

// withoutDigest is st without StatusInputsDigest: the digest alone never
// makes a status write.
func withoutDigest(st map[string]any) map[string]any {
	if _, ok := st[StatusInputsDigest]; !ok {
		return st
	}
	out := make(map[string]any, len(st))
	for k, v := range st {
		if k != StatusInputsDigest {
			out[k] = v
		}
	}
	return out
}
