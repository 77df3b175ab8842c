package operator_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// keeperWithClaim runs an operator on the lifecycle templates until a
// Keeper with a retained claim carries the retain finalizer, then stops
// it; it returns the namespace and the claim's uid.
func keeperWithClaim(t *testing.T, name string) (string, string) {
	t.Helper()
	ns := clustertest.Namespace(t)
	_, stop := startOperatorStoppable(t, lifecycleTemplates, ns, nil)
	waitLifecycleCRD(t, "keepers")
	c := newClient(t)
	applyKeeper(t, ns, name, "storageClass: fast")
	uid := string(exists(t, c, pvcGVK, ns, name+"-data").GetUID())
	eventually(t, 30*time.Second, func() string {
		if f := object(t, c, keeperGVK, ns, name).GetFinalizers(); !slices.Contains(f, wellknown.FinalizerRetain) {
			return fmt.Sprintf("finalizers %v", f)
		}
		return ""
	})
	stop()
	return ns, uid
}

// TestRetainedClaimReleasedAfterAllowedKindsNarrowed: the operator
// restarts with --allowed-kinds no longer naming PersistentVolumeClaim,
// and a Keeper whose claim is retained is deleted: the claim, a data
// kind, is still looked for, released and kept (before: only the allowed
// kinds were listed, the finalizer went, and the garbage collector
// deleted the claim).
func TestRetainedClaimReleasedAfterAllowedKindsNarrowed(t *testing.T) {
	ns, uid := keeperWithClaim(t, "narrowed")
	c := newClient(t)
	mustKubectl(t, "", "-n", ns, "delete", "keeper", "narrowed", "--wait=false")
	opts := operatortest.Options(lifecycleTemplates, ns)
	opts.AllowedKinds = render.MustKindSet(render.DefaultAllowedKinds)
	delete(opts.AllowedKinds, schema.GroupKind{Kind: "PersistentVolumeClaim"})
	operatortest.StartObserved(t, clustertest.Config(), opts)
	eventually(t, 90*time.Second, func() string {
		if k := object(t, c, keeperGVK, ns, "narrowed"); k != nil {
			return fmt.Sprintf("Keeper not gone: finalizers %v", k.GetFinalizers())
		}
		return ""
	})
	o := object(t, c, pvcGVK, ns, "narrowed-data")
	sameObject(t, o, uid)
	if why := released(o); why != "" {
		t.Errorf("claim not released: %s", why)
	}
}

// TestRetainedClaimKeptWhileDiscoveryFails: while the operator's REST
// mapper cannot reach discovery for PersistentVolumeClaims, a Keeper whose
// claim is retained is deleted: its finalizer stays (the deletion is
// retried), and once discovery answers the claim is released and kept
// (before: the kind was skipped as not served, the finalizer went, and the
// garbage collector deleted the claim).
func TestRetainedClaimKeptWhileDiscoveryFails(t *testing.T) {
	ns, uid := keeperWithClaim(t, "blind")
	c := newClient(t)
	mapper := &failingMapper{gk: schema.GroupKind{Kind: "PersistentVolumeClaim"}}
	mapper.failing.Store(true)
	opts := operatortest.Options(lifecycleTemplates, ns)
	opts.Manager.MapperProvider = func(cfg *rest.Config, h *http.Client) (meta.RESTMapper, error) {
		m, err := apiutil.NewDynamicRESTMapper(cfg, h)
		mapper.RESTMapper = m
		return mapper, err
	}
	operatortest.StartObserved(t, clustertest.Config(), opts)
	refusedBefore := mapper.refused.Load()
	mustKubectl(t, "", "-n", ns, "delete", "keeper", "blind", "--wait=false")
	// Three refused lookups after the deletion: the finalizer was retried.
	eventually(t, 60*time.Second, func() string {
		k := object(t, c, keeperGVK, ns, "blind")
		if k == nil || !slices.Contains(k.GetFinalizers(), wellknown.FinalizerRetain) {
			t.Fatalf("the Keeper lost its retain finalizer while its children could not be listed: %v", k)
		}
		if n := mapper.refused.Load() - refusedBefore; n < 3 {
			return fmt.Sprintf("%d lookups refused since the deletion", n)
		}
		return ""
	})
	mapper.failing.Store(false)
	eventually(t, 90*time.Second, func() string {
		if k := object(t, c, keeperGVK, ns, "blind"); k != nil {
			return fmt.Sprintf("Keeper not gone: finalizers %v", k.GetFinalizers())
		}
		return ""
	})
	o := object(t, c, pvcGVK, ns, "blind-data")
	sameObject(t, o, uid)
	if why := released(o); why != "" {
		t.Errorf("claim not released: %s", why)
	}
}

// failingMapper answers, while failing, every mapping of gk as the dynamic
// mapper does when discovery cannot be reached.
type failingMapper struct {
	meta.RESTMapper
	gk      schema.GroupKind
	failing atomic.Bool
	refused atomic.Int64
}

func (m *failingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk == m.gk && m.failing.Load() {
		m.refused.Add(1)
		return nil, fmt.Errorf("failed to get server groups: %w", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"))
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// nutTemplate renders one Bolt per Nut, retained when the Nut is deleted.
const nutTemplate = `package nut

resource: {group: "nuts.example.com", version: "v1", kind: "Nut"}

#Spec: {size: *1 | int & >=1}

` + testkit.ParentObserved + `
children: bolt: {
	apiVersion: "bolts.example.com/v1"
	kind:       "Bolt"
	metadata: name: parent.metadata.name
	spec: size: parent.spec.size
}
policies: bolt: onDelete: "retain"
ready: observed.bolt != _|_
`

// TestRetainedKindCRDDeleted: a Nut whose Bolt, a custom kind, is
// retained is deleted after the Bolt CRD was (its Bolts with it): its
// finalizer goes, as no Bolt can be left (before: the REST mapper still
// mapped Bolt, its list answered 404, and the deletion waited forever).
func TestRetainedKindCRDDeleted(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := kindsDir(t, map[string]string{"nut": nutTemplate})
	clustertest.DeleteCRDsAtEnd(t, "nuts.nuts.example.com")
	installCRD(t, testCRD("bolts.example.com", "Bolt", preserveSpec), "bolts.bolts.example.com")
	opts := operatortest.Options(dir, ns)
	opts.AllowedKinds = render.MustKindSet("Bolt.bolts.example.com," + render.DefaultAllowedKinds)
	operatortest.StartObserved(t, clustertest.Config(), opts)
	clustertest.WaitEstablished(t, 60*time.Second, "nuts.nuts.example.com")
	mustKubectl(t, "apiVersion: nuts.example.com/v1\nkind: Nut\nmetadata:\n  name: nn\n  namespace: "+ns+"\nspec:\n  size: 2\n", "apply", "-f", "-")
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "nut/nn", "--timeout=120s")
	if out, _ := kubectl(t, "", "-n", ns, "get", "nut", "nn", "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(out, wellknown.FinalizerRetain) {
		t.Fatalf("Nut's finalizers %s, want %s", out, wellknown.FinalizerRetain)
	}
	mustKubectl(t, "", "delete", "crd", "bolts.bolts.example.com", "--wait", "--timeout=60s")
	mustKubectl(t, "", "-n", ns, "delete", "nut", "nn", "--wait=false")
	mustKubectl(t, "", "-n", ns, "wait", "--for=delete", "nut/nn", "--timeout=90s")
}
