package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cueop/cueop/engine/wellknown"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPending(t *testing.T) {
	for _, c := range []struct {
		name   string
		stored []string
		from   []string
	}{
		{"stored at the storage version only", []string{"v2"}, nil},
		{"storage switched", []string{"v1", "v2"}, []string{"v1"}},
		{"two older versions", []string{"v1", "v1beta1", "v2"}, []string{"v1", "v1beta1"}},
		{"the storage version not listed yet", []string{"v1"}, []string{"v1"}},
	} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}, {Name: "v2", Storage: true}}
		crd.Status.StoredVersions = c.stored
		to, from := Pending(crd)
		if to != "v2" || !slices.Equal(from, c.from) {
			t.Errorf("%s: Pending = %s, %v; want v2, %v", c.name, to, from, c.from)
		}
	}
}

// TestResumeKeepsRefused: a pass resumed from a checkpoint taken after a
// refused rewrite counts it, so that it does not finish.
func TestResumeKeepsRefused(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Annotations = map[string]string{wellknown.AnnotationStorageMigration: `{"to":"v2","continue":"next","listed":4,"migrated":3,"pages":2,"refused":1}`}
	p := Progress{To: "v2"}
	if cont := resume(crd, &p); cont != "next" || p.Refused != 1 || p.Listed != 4 || !p.Resumed {
		t.Fatalf("resume = %q, %+v; want next, 1 refused of 4 listed, resumed", cont, p)
	}
	saved := Progress{To: "v2", Refused: 2}
	b, err := json.Marshal(checkpointOf(&saved, "more"))
	if err != nil {
		t.Fatal(err)
	}
	crd.Annotations[wellknown.AnnotationStorageMigration] = string(b)
	p = Progress{To: "v2"}
	if resume(crd, &p); p.Refused != 2 {
		t.Errorf("a saved checkpoint resumed with %d refused, want 2", p.Refused)
	}
}

// TestTransient: a rewrite the API server could not answer stops the pass
// (resumed from its checkpoint); one it refused for the CR is counted.
func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "migrate.example.com", Resource: "shelves"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewTooManyRequests("busy", 1), true},
		{apierrors.NewServiceUnavailable("down"), true},
		{apierrors.NewServerTimeout(gr, "patch", 1), true},
		{apierrors.NewForbidden(gr, "s02", errors.New("denied by policy")), false},
		{apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "Shelf"}, "s02", nil), false},
		{apierrors.NewInternalError(errors.New("conversion webhook for migrate.example.com/v1, Kind=Shelf failed")), false},
		{fmt.Errorf("Shelf ns/s02: rewrite at v2: %w", apierrors.NewConflict(gr, "s02", errors.New("changed"))), false},
	} {
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
