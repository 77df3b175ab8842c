package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/engine/wellknown"
)

// readyTracker follows the CRs of every kind of idKinds, in every
// namespace, through watches: Ready=True for their generation.
type readyTracker struct {
	mu     sync.Mutex
	ready  map[string]bool // by kind/namespace/name
	n      int
	cancel context.CancelFunc
}

func (l *lab) trackReady(ctx context.Context) (*readyTracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &readyTracker{ready: map[string]bool{}, cancel: cancel}
	f := dynamicinformer.NewDynamicSharedInformerFactory(l.dyn, 0)
	for _, k := range idKinds {
		if err := startInformer(ctx, f.ForResource(k.gvr).Informer(), f.Start, t.set, t.del); err != nil {
			cancel()
			return nil, fmt.Errorf("%s watch: %w", k.kind, err)
		}
	}
	return t, nil
}

func trackKey(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// crReady is whether u's status says Ready=True for its generation.
func crReady(u *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == wellknown.ConditionReady {
			return m["status"] == "True" && gen == u.GetGeneration()
		}
	}
	return false
}

func (t *readyTracker) set(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r := crReady(u)
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.ready[trackKey(u)]; old != r {
		if r {
			t.n++
		} else {
			t.n--
		}
	}
	t.ready[trackKey(u)] = r
}

func (t *readyTracker) del(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready[trackKey(u)] {
		t.n--
	}
	delete(t.ready, trackKey(u))
}

func (t *readyTracker) readyCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// notReady names up to max CRs not Ready, for an error.
func (t *readyTracker) notReady(max int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for k, r := range t.ready {
		if !r && len(out) < max {
			out = append(out, k)
		}
	}
	return out
}

func (t *readyTracker) stop() { t.cancel() }

// idChildren are the collections a run leaves in its namespaces, deleted
// before the namespaces (deleteNamespace's reason).
var idChildren = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	corev1.SchemeGroupVersion.WithResource("pods"),
	corev1.SchemeGroupVersion.WithResource("services"),
	corev1.SchemeGroupVersion.WithResource("configmaps"),
	corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"),
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
	{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
	corev1.SchemeGroupVersion.WithResource("events"),
}

// deleteSpace deletes the namespaces of sp and everything in them, with no
// operator running: the CRs' finalizers are taken off first (nobody would
// take them off), then every collection goes, then the namespaces.
func (l *lab) deleteSpace(ctx context.Context, sp crSpace) (time.Duration, error) {
	start := time.Now()
	if _, err := harness.SetConversion(ctx, l.rest, l.crd, false); err != nil {
		return 0, err
	}
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg}
	err := parallel(ctx, len(sp.names), 4, func(ctx context.Context, i int) error {
		ns := sp.names[i]
		for _, k := range idKinds {
			if err := l.dropFinalizers(ctx, k.gvr, ns); err != nil {
				return err
			}
		}
		for _, k := range idKinds {
			if err := l.dyn.Resource(k.gvr).Namespace(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
				return fmt.Errorf("delete %s in %s: %w", k.gvr.Resource, ns, err)
			}
		}
		for _, gvr := range idChildren {
			if err := l.dyn.Resource(gvr).Namespace(ns).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
				return fmt.Errorf("delete %s in %s: %w", gvr.Resource, ns, err)
			}
		}
		return l.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	if err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, ns := range sp.names {
			if _, err := l.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	return time.Since(start), err
}

// dropFinalizers takes the finalizers off every CR of gvr in ns.
func (l *lab) dropFinalizers(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	list, err := l.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list %s in %s: %w", gvr.Resource, ns, err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	for _, u := range list.Items {
		if len(u.GetFinalizers()) == 0 {
			continue
		}
		_, err := l.dyn.Resource(gvr).Namespace(ns).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s %s/%s: drop finalizers: %w", u.GetKind(), ns, u.GetName(), err)
		}
	}
	return nil
}
