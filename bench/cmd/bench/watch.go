package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cueop/cueop/engine/wellknown"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

var crGVR = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1", Resource: "redisclusters"}

// crState is what the driver follows of one RedisCluster.
type crState struct {
	ready       bool   // Ready=True for the current generation, every Pod ready
	revision    string // status.revision (cueop only)
	reconciling string // status of the Reconciling condition (cueop only)
}

func stateOf(u *unstructured.Unstructured) crState {
	var s crState
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	s.revision, _, _ = unstructured.NestedString(u.Object, "status", "revision")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	readyCond := ""
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch m["type"] {
		case wellknown.ConditionReady:
			readyCond, _ = m["status"].(string)
		case wellknown.ConditionReconciling:
			s.reconciling, _ = m["status"].(string)
		}
	}
	s.ready = readyCond == "True" && gen == u.GetGeneration() && ready == replicas
	return s
}

// crTracker follows the RedisClusters of one namespace through a watch.
type crTracker struct {
	mu       sync.Mutex
	st       map[string]crState
	ready    int
	minReady int // the fewest Ready CRs seen since resetMin
	cancel   context.CancelFunc
}

func (l *lab) trackCRs(ctx context.Context, ns string) (*crTracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &crTracker{st: map[string]crState{}, cancel: cancel}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(l.dyn, 0, ns, nil)
	if err := startInformer(ctx, f.ForResource(crGVR).Informer(), f.Start, t.set, t.del); err != nil {
		cancel()
		return nil, fmt.Errorf("RedisCluster watch in %s: %w", ns, err)
	}
	return t, nil
}

// startInformer sends inf's events to set and del, starts it with start and
// waits for its first list.
func startInformer(ctx context.Context, inf cache.SharedIndexInformer, start func(<-chan struct{}), set, del func(any)) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: del,
	})
	if err != nil {
		return err
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("did not sync")
	}
	return nil
}

func (t *crTracker) set(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s := stateOf(u)
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.st[u.GetName()]; old.ready != s.ready {
		if s.ready {
			t.ready++
		} else {
			t.ready--
		}
	}
	t.st[u.GetName()] = s
	t.minReady = min(t.minReady, t.ready)
}

func (t *crTracker) del(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st[u.GetName()].ready {
		t.ready--
	}
	delete(t.st, u.GetName())
	t.minReady = min(t.minReady, t.ready)
}

// readyCount is the number of Ready CRs.
func (t *crTracker) readyCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready
}

// count is the number of CRs whose state satisfies f.
func (t *crTracker) count(f func(crState) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.st {
		if f(s) {
			n++
		}
	}
	return n
}

// resetMin starts a new minimum of the Ready count; min returns it.
func (t *crTracker) resetMin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.minReady = t.ready
}

func (t *crTracker) min() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.minReady
}

func (t *crTracker) stop() { t.cancel() }

// podTracker follows the labels of the Pods of one namespace through a
// metadata-only watch.
type podTracker struct {
	mu      sync.Mutex
	labels  map[string]map[string]string
	waiters map[string]*podWaiter
	cancel  context.CancelFunc
}

// podWaiter collects the values of one label of one Pod as the watch
// delivers them.
type podWaiter struct {
	key    string
	events []podEvent
	notify chan struct{}
}

type podEvent struct {
	rv    uint64
	value string
	at    time.Time
}

func (l *lab) trackPods(ctx context.Context, ns string) (*podTracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &podTracker{labels: map[string]map[string]string{}, waiters: map[string]*podWaiter{}, cancel: cancel}
	f := metadatainformer.NewFilteredSharedInformerFactory(l.meta, 0, ns, nil)
	inf := f.ForResource(corev1.SchemeGroupVersion.WithResource("pods")).Informer()
	if err := startInformer(ctx, inf, f.Start, t.set, t.del); err != nil {
		cancel()
		return nil, fmt.Errorf("Pod watch in %s: %w", ns, err)
	}
	return t, nil
}

func (t *podTracker) set(obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.labels[m.Name] = m.Labels
	if w := t.waiters[m.Name]; w != nil {
		rv, _ := strconv.ParseUint(m.ResourceVersion, 10, 64)
		w.events = append(w.events, podEvent{rv: rv, value: m.Labels[w.key], at: now})
		select {
		case w.notify <- struct{}{}:
		default:
		}
	}
}

func (t *podTracker) del(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		t.mu.Lock()
		delete(t.labels, m.Name)
		t.mu.Unlock()
	}
}

// labelled is the number of Pods with label key=value, and of all Pods.
func (t *podTracker) labelled(key, value string) (n, all int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.labels {
		if l[key] == value {
			n++
		}
	}
	return n, len(t.labels)
}

// watchLabel starts collecting the values of label key of Pod name.
func (t *podTracker) watchLabel(name, key string) *podWaiter {
	w := &podWaiter{key: key, notify: make(chan struct{}, 1)}
	t.mu.Lock()
	t.waiters[name] = w
	t.mu.Unlock()
	return w
}

// await returns when the watch delivered the Pod with label value want at
// a resourceVersion after afterRV, and stops collecting.
func (t *podTracker) await(ctx context.Context, name string, w *podWaiter, afterRV uint64, want string, timeout time.Duration) (time.Time, error) {
	defer func() {
		t.mu.Lock()
		delete(t.waiters, name)
		t.mu.Unlock()
	}()
	deadline := time.After(timeout)
	for {
		t.mu.Lock()
		for _, ev := range w.events {
			if ev.rv > afterRV && ev.value == want {
				t.mu.Unlock()
				return ev.at, nil
			}
		}
		t.mu.Unlock()
		select {
		case <-w.notify:
		case <-deadline:
			return time.Time{}, fmt.Errorf("pod %s: label %s not back to %q within %s", name, w.key, want, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func (t *podTracker) stop() { t.cancel() }
