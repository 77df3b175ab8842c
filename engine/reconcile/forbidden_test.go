package reconcile

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cueop/cueop/engine/wellknown"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func forbiddenErr(reason string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web", errors.New(reason))
}

func TestDenyNamesRequestUserVerbResource(t *testing.T) {
	rbac := forbiddenErr(`User "system:serviceaccount:cueop-system:cueop-x" cannot create resource "configmaps" in API group "" in the namespace "shop"`)
	err := deny("create ConfigMap shop/web", rbac)
	want := "create ConfigMap shop/web: forbidden for system:serviceaccount:cueop-system:cueop-x (verb create, resource configmaps)"
	if err.Error() != want {
		t.Fatalf("deny = %q, want %q", err, want)
	}
	if !apierrors.IsForbidden(err) {
		t.Fatal("a denial is no longer Forbidden")
	}
	apps := forbiddenErr(`User "u" cannot list resource "deployments" in API group "apps" at the cluster scope`)
	if got := deny("watch Deployment children", apps).Error(); got != "watch Deployment children: forbidden for u (verb list, resource deployments.apps)" {
		t.Fatalf("deny = %q", got)
	}
	quota := forbiddenErr("exceeded quota: q, requested: configmaps=1")
	if got := deny("create ConfigMap shop/web", quota); got != quota {
		t.Fatalf("a Forbidden naming no user is a denial: %v", got)
	}
}

func TestSplitDenials(t *testing.T) {
	d1 := deny("create ConfigMap shop/a", forbiddenErr(`User "u" cannot create resource "configmaps" in API group "" in the namespace "shop"`))
	d2 := deny("delete Pod shop/b", forbiddenErr(`User "u" cannot delete resource "pods" in API group "" in the namespace "shop"`))
	other := errors.New("connection refused")
	lines, rest := splitDenials(fmt.Errorf("Gadget shop/g: %w", errors.Join(d1, d2, d1)))
	if len(lines) != 2 || rest != nil {
		t.Fatalf("denials only: lines %q, rest %v", lines, rest)
	}
	lines, rest = splitDenials(errors.Join(d1, fmt.Errorf("x: %w", other)))
	if len(lines) != 1 || rest == nil || !errors.Is(rest, other) || errors.Is(rest, d1) {
		t.Fatalf("mixed: lines %q, rest %v", lines, rest)
	}
	if lines, rest := splitDenials(other); lines != nil || rest != other {
		t.Fatalf("no denial: lines %q, rest %v", lines, rest)
	}
	r := &run{observeFailed: fmt.Errorf("list: %w", d1)}
	if o, err := r.forbidden(r.observeFailed); !r.note(o) || err != nil || r.observeFailed != nil || r.stalled == nil || r.stalled.reason != wellknown.ReasonForbidden {
		t.Fatalf("a denied observe: err %v, observeFailed %v, stalled %v", err, r.observeFailed, r.stalled)
	}
}
