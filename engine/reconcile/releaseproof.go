package reconcile

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
)

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
