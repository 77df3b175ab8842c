// Stage 5, apply: the children, wave by wave for a kind with waves (a wave
// waits for the lower ones to be ready: gateReady); an absent child is
// created create-only, and an existing object of its name adopted only when
// the CR controls it or may adopt it (ownership, release proofs); a child
// whose change is immutable is recreated only when its policy says so. The
// release of a child, which prune and deletion share, is here too. The
// finalizers stage 5 syncs first are in deletion.go.
//
// It must not write a child but through package apply, nor delete a child
// the render still has (but to recreate it).

package reconcile

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// childWriter is stage 5: it applies a CR's rendered children, claiming
// an existing object of a child's name only when the CR controls it or may
// adopt it, and recreates a child whose change is immutable
// when its policy allows.
type childWriter struct {
	applier *apply.Applier
	records *crs // the per-CR records: the children found in conflict
	rel     releaser
	modes   BindingModes // nil: a Pending claim is not ready for the gates
	tally   tally
	cr      *unstructured.Unstructured
}

// applyAll applies every child of res that would change, but those held
// (a later wave): first it creates those v does not hold,
// claiming an object of a child's name only when the CR controls it or may
// adopt it; while one is in conflict the CR stalls and
// nothing that exists is changed. A child whose change the API server
// refuses as immutable is recreated when its policy allows it, one per CR
// at a time and only while every other child is ready, so a rollout never
// takes down more than one child of a CR; when its policy does not, the CR
// stalls.
func (w childWriter) applyAll(ctx context.Context, res *render.Result, v *view, held map[string]bool) (outcome, error) {
	o, errs := w.createAbsent(ctx, res, v, held)
	if o.stall != nil {
		return o, errors.Join(errs...)
	}
	var immutable []refusal
	for _, c := range res.Children {
		live := v.live(c)
		if held[c.ID] || live == nil {
			continue // a later wave, or created above
		}
		action, err := w.applier.Apply(ctx, c.Object, live)
		err = deny("apply "+objectText(c.Object), err) // forbidden.go
		if err == nil {
			action, err = w.dropReleasedMark(ctx, c, live, action)
		}
		switch {
		case err != nil && apply.IsImmutable(err):
			immutable = append(immutable, refusal{c, err})
		case err != nil:
			w.tally.applied("", err)
			errs = append(errs, err)
		default:
			w.tally.done(action, c.Object, nil)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return applyFailed(err), err
	}
	return w.recreate(ctx, res, v, immutable)
}

// applyFailed stalls the CR when the API server refuses a child for good
// (invalid, forbidden, a field its schema does not declare); other
// failures are retried with backoff. A stalled CR counts against its
// rollout, which halts (rollout.go) instead of moving every CR to a
// revision the API server refuses.
func applyFailed(err error) outcome {
	terminating := apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
	if !terminating && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || undeclaredField(err)) {
		return stallOf(wellknown.ReasonApplyRejected, err.Error())
	}
	return waitFor("apply failed, retrying: " + err.Error())
}

// undeclaredField tells the API server's answer to an apply with a field
// the kind's schema does not declare: an InternalError (500) whose
// message says so, not a BadRequest (kubernetes/kubernetes#122480), and
// no less final.
func undeclaredField(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "field not declared in schema")
}

// recreate deletes the first child whose change is immutable, to be
// created again, when its policy allows and every other child is ready
// .
func (w childWriter) recreate(ctx context.Context, res *render.Result, v *view, immutable []refusal) (outcome, error) {
	if len(immutable) == 0 {
		return outcome{}, nil
	}
	if o := stallImmutable(immutable); o.stall != nil {
		return o, nil
	}
	c := immutable[0].child
	if !othersReady(ctx, res, v, c.ID, w.modes) {
		return waitFor(fmt.Sprintf("waiting for children to be ready before recreating %s %s", c.Object.GetKind(), c.Object.GetName())), nil
	}
	live := v.live(c)
	if err := deny("delete "+objectText(live), w.applier.Replace(ctx, live, c.Policy.Cascade == render.CascadeOrphan)); err != nil {
		w.tally.applied("", err)
		return outcome{}, err
	}
	w.tally.done(apply.Recreated, c.Object, nil)
	return waitFor(fmt.Sprintf("recreating %s %s: an immutable field changed", c.Object.GetKind(), c.Object.GetName())), nil
}

// othersReady is true when every child of res but id exists and is ready
// for the gates (gateReady: its readyWhen, else kstatus).
func othersReady(ctx context.Context, res *render.Result, v *view, id string, modes BindingModes) bool {
	for _, c := range res.Children {
		if ok, _ := gateReady(ctx, c, v.wholeLive(c), modes); c.ID != id && !ok { // observe.go
			return false
		}
	}
	return true
}

// WaveGate is what a reconcile holds back of a render with waves: the
// children of every wave above the first wave with a child that does not
// exist or is not ready.
type WaveGate struct {
	// Held are the ids of the children not applied yet (nor pruned, when
	// they exist); nil when nothing is held.
	Held map[string]bool
	// Wave is the wave the held children wait for (the first one not
	// ready), Blocker its first child that is not, and Why "to exist", "to
	// be ready" or "to be ready (readyWhen)".
	Wave    int
	Blocker *render.Child
	Why     string

	next int // the first wave held
}

// Message says which wave waits for which child, as the CR's Reconciling
// condition does; "" when nothing is held.
func (g WaveGate) Message() string {
	if g.Blocker == nil {
		return ""
	}
	o := g.Blocker.Object
	return fmt.Sprintf("wave %d waits for children.%s: %s %s/%s %s", g.next, g.Blocker.ID, o.GetKind(), o.GetNamespace(), o.GetName(), g.Why)
}

// gateWaves is what a reconcile of k holds back of res: the children of
// every wave above the first wave with a child that does not exist or is
// not ready for the gates (gateReady: its readyWhen, else kstatus), not
// applied yet (nor pruned, when they exist), and which child they wait for
// (nil and "" when nothing is held). A kind without waves holds nothing
// back.
func gateWaves(ctx context.Context, k *template.Kind, res *render.Result, v *view, modes BindingModes) (map[string]bool, string) {
	if !k.Waves {
		return nil, ""
	}
	g := GateWaves(ctx, res.Children, v.wholeLive, modes) // observe.go
	return g.Held, g.Message()
}

// GateWaves is what a reconcile holds back of children, live being the
// live object of a child (nil when it does not exist), modes the binding
// modes of StorageClasses (nil: none known); see gateReady. Children all
// of wave 0 hold nothing back.
func GateWaves(ctx context.Context, children []render.Child, live func(render.Child) *unstructured.Unstructured, modes BindingModes) WaveGate {
	byWave := map[int][]render.Child{}
	var waves []int
	for _, c := range children {
		if _, ok := byWave[c.Wave]; !ok {
			waves = append(waves, c.Wave)
		}
		byWave[c.Wave] = append(byWave[c.Wave], c)
	}
	sort.Ints(waves)
	for i, w := range waves {
		blocker, why := blocker(ctx, byWave[w], live, modes)
		if blocker == nil || i == len(waves)-1 {
			continue
		}
		g := WaveGate{Held: map[string]bool{}, Wave: w, Blocker: blocker, Why: why, next: waves[i+1]}
		for _, later := range waves[i+1:] {
			for _, c := range byWave[later] {
				g.Held[c.ID] = true
			}
		}
		return g
	}
	return WaveGate{}
}

// blocker is the first child of a wave that does not let the gate pass
// (gateReady), and what it waits for.
func blocker(ctx context.Context, wave []render.Child, live func(render.Child) *unstructured.Unstructured, modes BindingModes) (*render.Child, string) {
	for i, c := range wave {
		if ok, why := gateReady(ctx, c, live(c), modes); !ok {
			return &wave[i], why
		}
	}
	return nil, ""
}

// BindingModeWaitForFirstConsumer is the volumeBindingMode of a
// StorageClass whose claims stay Pending until a Pod uses them.
const BindingModeWaitForFirstConsumer = "WaitForFirstConsumer"

// BindingModes returns the volumeBindingMode of the StorageClass named
// class ("Immediate", "WaitForFirstConsumer"), for the gates.
type BindingModes func(ctx context.Context, class string) (string, error)

// gateReady says whether child c, whose live object is live (nil when it
// does not exist), lets the gates pass (the waves and the recreate gate),
// and if not what it waits for: "to exist", "to be ready (readyWhen)", "to
// be ready". The template's readyWhen decides where given, else kstatus,
// except for two states that only a later wave can end, which count as
// ready for the gates (not for the CR's Ready condition): a
// PersistentVolumeClaim Pending under a WaitForFirstConsumer StorageClass
// (its consumer is what binds it) and a LoadBalancer Service without an
// address (its clients need not wait for one). modes may be nil: then
// every Pending claim waits.
func gateReady(ctx context.Context, c render.Child, live *unstructured.Unstructured, modes BindingModes) (bool, string) {
	switch {
	case live == nil:
		return false, "to exist"
	case c.ReadyWhen != nil:
		return *c.ReadyWhen, "to be ready (readyWhen)"
	}
	if res, err := status.Compute(live); err == nil && res.Status == status.CurrentStatus {
		return true, ""
	}
	switch live.GroupVersionKind().GroupKind().String() {
	case "Service":
		if t, _, _ := unstructured.NestedString(live.Object, "spec", "type"); t == "LoadBalancer" {
			return true, ""
		}
	case "PersistentVolumeClaim":
		return claimWaitsForConsumer(ctx, live, modes)
	}
	return false, "to be ready"
}

// claimWaitsForConsumer is true for a claim not bound yet whose
// StorageClass binds on first use: it is as ready as it gets before its
// consumer exists.
func claimWaitsForConsumer(ctx context.Context, pvc *unstructured.Unstructured, modes BindingModes) (bool, string) {
	phase, _, _ := unstructured.NestedString(pvc.Object, "status", "phase")
	class, _, _ := unstructured.NestedString(pvc.Object, "spec", "storageClassName")
	if modes == nil || class == "" || (phase != "" && phase != "Pending") {
		return false, "to be ready"
	}
	mode, err := modes(ctx, class)
	if err != nil {
		return false, "to be ready (its StorageClass " + class + " could not be read: " + err.Error() + ")"
	}
	return mode == BindingModeWaitForFirstConsumer, "to be ready"
}

// Ownership is explicit: cueop creates a child only where no object of its
// group, kind, namespace and name exists, and writes only to objects whose
// controller owner reference is the CR. The cache holds only what carries
// cueop's labels, so it cannot tell that a name is taken: a child the
// cache does not hold is sent as a create-only apply (apply.ErrExists when
// the name is taken), and the object found is then read from the API server
// and claimed, adopted or reported as a conflict.

// Adopted is the action of taking over an existing object (policies:
// adopt), for events and metrics.
const Adopted apply.Action = "adopted"

// conflictRecheck is how often a CR in conflict looks again at the objects
// that hold its children's names, besides its own events: they are not
// cueop's, so their deletion or release brings no event.
const conflictRecheck = time.Minute

// Claim is what a CR may do with an existing object of a rendered child's
// name.
type Claim struct {
	// Adopt is set when the CR does not control the object but its policy
	// lets it take it over.
	Adopt bool
	// Released is set with Adopt when the adoption rests on the object's
	// wellknown.AnnotationReleasedFrom alone: it holds only if the object's
	// wellknown.AnnotationReleaseProof verifies.
	Released bool
	// Conflict, when not "", says why the CR may not write to the object:
	// the child id, the object and its controller.
	Conflict string
}

// ClaimOf is what cr may do with obj, the live object of its child c: apply
// over it when cr controls it; adopt it when it has no controller and c's
// policy allows (adopt: "uncontrolled", or the default "released" for an
// object cueop released from a CR of cr's kind, namespace and name);
// otherwise leave it alone, a conflict. An adoption by the released-from
// mark (Claim.Released) holds only once the mark's proof verifies, which
// the reconciler checks with its key.
func ClaimOf(cr *unstructured.Unstructured, c render.Child, obj *unstructured.Unstructured) Claim {
	ctl := metav1.GetControllerOfNoCopy(obj)
	if ctl != nil && ctl.UID == cr.GetUID() {
		return Claim{}
	}
	head := fmt.Sprintf("children.%s: %s %s/%s exists", c.ID, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	if ctl != nil {
		return Claim{Conflict: head + " and is controlled by " + controllerText(cr, ctl, obj.GetNamespace())}
	}
	from := obj.GetAnnotations()[wellknown.AnnotationReleasedFrom]
	switch {
	case c.Policy.Adopt == render.AdoptUncontrolled:
		return Claim{Adopt: true}
	case c.Policy.Adopt == render.AdoptReleased && from == subjectOf(cr):
		return Claim{Adopt: true, Released: true}
	case c.Policy.Adopt == render.AdoptReleased && from == fmt.Sprintf("%s %s/%s", cr.GetKind(), cr.GetNamespace(), cr.GetName()):
		// The mark of a cueop that did not name the group: it may be of
		// a kind of the same name in another group, and it carries no
		// proof, so only a person may say it is this
		// CR's, by its policy.
		head += fmt.Sprintf(" with no controller (released from %s, a mark without the kind's group or a proof, as cueop wrote it before it named the group)", from)
	case from != "":
		head += " with no controller (released from " + from + ")"
	default:
		head += " with no controller"
	}
	return Claim{Conflict: fmt.Sprintf("%s; policies: %s: adopt: %q would take it over", head, c.ID, render.AdoptUncontrolled)}
}

// controllerText names ctl, the controller of an object in ns; a CR of
// cr's kind and name with another uid is an earlier one, deleted (the
// garbage collector deletes the object in time).
func controllerText(cr *unstructured.Unstructured, ctl *metav1.OwnerReference, ns string) string {
	name := fmt.Sprintf("%s %s/%s", ctl.Kind, ns, ctl.Name)
	gv, err := schema.ParseGroupVersion(ctl.APIVersion)
	if err != nil || gv.Group != cr.GroupVersionKind().Group || ctl.Kind != cr.GetKind() || ctl.Name != cr.GetName() {
		return name
	}
	return fmt.Sprintf("an earlier %s (uid %s), not this one (uid %s)", name, ctl.UID, cr.GetUID())
}

// subjectOf names a CR as its released children's wellknown.AnnotationReleasedFrom
// does: "Kind.group ns/name". The group is part of the name: a kind of the
// same name in another group is another kind, and its CR of the same
// namespace and name may not adopt what this one released.
func subjectOf(cr *unstructured.Unstructured) string {
	gk := cr.GroupVersionKind().GroupKind()
	return fmt.Sprintf("%s %s/%s", gk.String(), cr.GetNamespace(), cr.GetName())
}

// claimed is an existing object of a child's name, the child a reconcile
// did not find in its cache, and what the CR may do with it.
type claimed struct {
	child render.Child
	obj   *unstructured.Unstructured
	Claim
}

// createAbsent applies, first of all, every child (of the waves not held)
// that the cache does not hold: each is created where its name is free,
// then, unless an object found is in conflict, applied over the objects
// found that the CR controls or may adopt. When any is in conflict the CR
// stalls: nothing that exists is changed, here or in applyAll.
func (w childWriter) createAbsent(ctx context.Context, res *render.Result, v *view, held map[string]bool) (outcome, []error) {
	var failed []error
	var lines []string
	var claims []claimed
	ids := map[string]bool{}
	for _, c := range res.Children {
		if held[c.ID] || v.live(c) != nil {
			continue
		}
		action, cl, err := w.create(ctx, c)
		switch {
		case err != nil:
			w.tally.applied("", err)
			failed = append(failed, err)
		case cl != nil && cl.Conflict != "":
			lines, ids[c.ID] = append(lines, cl.Conflict), true
		case cl != nil:
			claims = append(claims, *cl)
		default:
			w.tally.done(action, c.Object, nil)
		}
	}
	w.records.setConflicts(client.ObjectKeyFromObject(w.cr), ids)
	if len(lines) > 0 {
		return stallOf(wellknown.ReasonChildConflict, strings.Join(lines, "\n")), failed
	}
	return outcome{}, append(failed, w.claimAll(ctx, claims)...)
}

// create creates c where its name is free, with a create-only apply, or
// else reads the object of its name: for a child found in conflict before,
// the read comes first, so that a CR in conflict sends no write.
func (w childWriter) create(ctx context.Context, c render.Child) (apply.Action, *claimed, error) {
	a := w.applier
	if !w.records.hadConflict(client.ObjectKeyFromObject(w.cr), c.ID) {
		action, err := a.Apply(ctx, c.Object, nil)
		if !apply.IsExists(err) {
			return action, nil, deny("create "+objectText(c.Object), err) // forbidden.go
		}
	}
	obj, err := a.Get(ctx, c.Object)
	if err != nil {
		return "", nil, deny("get "+objectText(c.Object), err)
	}
	if obj == nil { // gone meanwhile
		action, err := a.Apply(ctx, c.Object, nil)
		return action, nil, deny("create "+objectText(c.Object), err)
	}
	cl := &claimed{child: c, obj: obj, Claim: ClaimOf(w.cr, c, obj)}
	if err := w.rel.prove(ctx, cl); err != nil {
		return "", nil, err
	}
	return "", cl, nil
}

// claimAll applies each child over the object of its name, which the CR
// controls (its cache had not seen it) or adopts.
func (w childWriter) claimAll(ctx context.Context, claims []claimed) []error {
	var failed []error
	for _, cl := range claims {
		apply := w.applier.Apply
		if cl.Released {
			// Over the object whose proof verified, not one that took
			// its name since.
			apply = w.applier.ApplyOver
		}
		action, err := apply(ctx, cl.child.Object, cl.obj)
		err = deny("apply "+objectText(cl.child.Object), err) // forbidden.go
		if err == nil && cl.Adopt {
			action = Adopted
		}
		w.tally.done(action, cl.child.Object, err)
		if err != nil {
			failed = append(failed, err)
		}
	}
	return failed
}

// dropReleasedMark removes wellknown.AnnotationReleasedFrom, and its proof, from live, a child the CR
// controls again (adopted), unless the template renders it; action is what
// the apply before it did, and what the reconcile did to the child.
func (w childWriter) dropReleasedMark(ctx context.Context, c render.Child, live *unstructured.Unstructured, action apply.Action) (apply.Action, error) {
	if _, ok := live.GetAnnotations()[wellknown.AnnotationReleasedFrom]; !ok {
		return action, nil
	}
	if _, rendered := c.Object.GetAnnotations()[wellknown.AnnotationReleasedFrom]; rendered {
		return action, nil
	}
	if action == apply.Unchanged {
		action = apply.Updated
	}
	return action, deny("patch "+objectText(live), w.applier.RemoveAnnotations(ctx, live, wellknown.AnnotationReleasedFrom, wellknown.AnnotationReleaseProof))
}

// setConflicts remembers the children of key found in conflict by its
// last reconcile.
func (s *crs) setConflicts(key types.NamespacedName, ids map[string]bool) {
	s.change(key, func(c *crRecord) { c.conflicts = ids })
}

// hadConflict says whether key's last reconcile found child id in conflict.
func (s *crs) hadConflict(key types.NamespacedName, id string) bool {
	had := false
	s.read(key, func(c *crRecord) { had = c.conflicts[id] })
	return had
}

// A released child's wellknown.AnnotationReleasedFrom is text anyone who may write
// the object may write: alone, it would let anyone make an object of
// their own, with fields of their choosing, which a CR of the name it
// gives then takes over. So cueop marks what it releases with a proof
// only it can make, wellknown.AnnotationReleaseProof: an HMAC-SHA256, under a key
// only the operator reads (Host.ReleaseKey), of the object's uid,
// group, kind, namespace and name and the CR it was released from. A mark
// whose proof is missing, or does not verify (another object's, another
// CR's, another key's), is a conflict: the CR stalls with ChildConflict
// and the object is left as it is.

// ReleaseProof is the proof, under key, that obj was released from the
// CR from (wellknown.AnnotationReleasedFrom's value): "v1:" and the base64 (raw URL
// encoding) HMAC-SHA256 of each of obj's uid, group, kind, namespace and
// name and from, each preceded by its length.
func ReleaseProof(key []byte, obj *unstructured.Unstructured, from string) string {
	gk := obj.GroupVersionKind().GroupKind()
	mac := hmac.New(sha256.New, key)
	for _, s := range []string{wellknown.AnnotationReleaseProof + "/v1", string(obj.GetUID()), gk.Group, gk.Kind, obj.GetNamespace(), obj.GetName(), from} {
		fmt.Fprintf(mac, "%d:%s", len(s), s)
	}
	return "v1:" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// proven tells whether obj's wellknown.AnnotationReleaseProof proves, under key,
// that it was released from from; "" when it does, else why not.
func proven(key []byte, obj *unstructured.Unstructured, from string) string {
	proof, ok := obj.GetAnnotations()[wellknown.AnnotationReleaseProof]
	switch {
	case !ok:
		return "it has no " + wellknown.AnnotationReleaseProof + " annotation: cueop did not release it"
	case len(key) == 0:
		return "no release key to verify its " + wellknown.AnnotationReleaseProof + " annotation"
	case !hmac.Equal([]byte(proof), []byte(ReleaseProof(key, obj, from))):
		return "its " + wellknown.AnnotationReleaseProof + " annotation does not verify: cueop did not release this object from " + from
	}
	return ""
}

// releaser lets go of a CR's children, marked with the proof that cueop
// released them, and checks the proof of a child to adopt by its mark.
type releaser struct {
	applier *apply.Applier
	host    Host // nil: releases carry no proof, no adoption by the mark
	cr      *unstructured.Unstructured
}

// key is the key of the release proofs; nil when the reconciler has none
// (no Reconciler.Host: releases carry no proof, and nothing is adopted by
// its released-from mark).
func (x releaser) key(ctx context.Context) ([]byte, error) {
	if x.host == nil {
		return nil, nil
	}
	key, err := x.host.ReleaseKey(ctx)
	if err != nil {
		// Not wrapped: a refusal to read the operator's own Secret is not
		// a refusal of the child's request (forbidden.go).
		return nil, fmt.Errorf("release key: %v", err)
	}
	return key, nil
}

// prove turns cl, an adoption that rests on obj's released-from mark, into
// a conflict unless obj's proof verifies.
func (x releaser) prove(ctx context.Context, cl *claimed) error {
	if !cl.Adopt || !cl.Released {
		return nil
	}
	key, err := x.key(ctx)
	if err != nil {
		return err
	}
	cl.Claim = ProveClaim(key, cl.child, cl.obj, cl.Claim)
	return nil
}

// ProveClaim is claim, what ClaimOf answered for obj, the live object of
// c, once an adoption resting on obj's released-from mark (Claim.Released)
// is checked against the mark's proof under key: a conflict, naming why,
// unless the proof verifies. Any other claim is answered as it is. With
// no key (cueop diff, which may not read the operator's key) a proof
// present cannot be checked and is a conflict too; a caller without the
// key tells a missing proof, which no key makes good, by HasReleaseProof.
func ProveClaim(key []byte, c render.Child, obj *unstructured.Unstructured, claim Claim) Claim {
	if !claim.Adopt || !claim.Released {
		return claim
	}
	from := obj.GetAnnotations()[wellknown.AnnotationReleasedFrom]
	if why := proven(key, obj, from); why != "" {
		return Claim{Conflict: fmt.Sprintf("children.%s: %s %s/%s exists with no controller, marked released from %s, but %s; policies: %s: adopt: %q would take it over",
			c.ID, obj.GetKind(), obj.GetNamespace(), obj.GetName(), from, why, c.ID, render.AdoptUncontrolled)}
	}
	return claim
}

// HasReleaseProof tells whether obj carries a release proof at all
// (wellknown.AnnotationReleaseProof), verified or not.
func HasReleaseProof(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[wellknown.AnnotationReleaseProof]
	return ok
}

// releasedKeys are the labels and annotations by which cueop manages a
// child; a released child loses them.
var releasedKeys = []string{
	wellknown.LabelManagedBy, wellknown.LabelOwnerUID, wellknown.LabelID,
	wellknown.AnnotationAppliedHash, wellknown.AnnotationPrune, wellknown.AnnotationOnDelete,
}

// release lets go of o (apply.Release), marking it with the CR it came from
// and the proof that cueop released it.
func (x releaser) release(ctx context.Context, o *unstructured.Unstructured) error {
	from := subjectOf(x.cr)
	mark := map[string]string{wellknown.AnnotationReleasedFrom: from}
	key, err := x.key(ctx)
	if err != nil {
		return err
	}
	if key != nil {
		if o.GetKind() == "" || o.GetUID() == "" {
			return fmt.Errorf("release of %s/%s: its kind and uid are not known, no proof can be made", o.GetNamespace(), o.GetName())
		}
		mark[wellknown.AnnotationReleaseProof] = ReleaseProof(key, o, from)
	}
	return x.applier.Release(ctx, o, x.cr.GetUID(), releasedKeys, mark)
}

// refusal is a child whose change the API server refused as immutable.
type refusal struct {
	child render.Child
	err   error
}

// stallImmutable stalls the CR when a child whose change is immutable may
// not be recreated: nothing is deleted, not even the children that may be.
func stallImmutable(refused []refusal) outcome {
	var lines []string
	for _, f := range refused {
		if f.child.Policy.Recreate {
			continue
		}
		o, id := f.child.Object, f.child.ID
		hint := fmt.Sprintf("nothing was deleted: change it back, delete it by hand, or let the template recreate it (policies: %q: recreate: true)", id)
		if !render.Recreatable(o.GroupVersionKind().GroupKind()) {
			hint = fmt.Sprintf("a %s is never recreated, nothing was deleted: change it back or replace it by hand", o.GetKind())
		}
		lines = append(lines, fmt.Sprintf("children.%s: %s %s/%s: the API server refuses the change as immutable (%s); %s",
			id, o.GetKind(), o.GetNamespace(), o.GetName(), strings.Join(apply.ImmutableFields(f.err), "; "), hint))
	}
	if len(lines) == 0 {
		return outcome{}
	}
	return stallOf(wellknown.ReasonImmutableChange, strings.Join(lines, "\n"))
}
