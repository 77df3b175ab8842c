package main

// The floor of `bench scale`: what converging N RedisClusters costs the API
// server and the cluster with no operator at all. The driver creates the
// CRs as it does for the operator (16 clients in parallel); a bare client
// takes each created CR, renders its children offline (engine/render, the
// template cueop serves, the CR as the API server answered, so with its
// uid: the same objects, names, labels, owner reference and applied-hash
// annotation cueop sends) and sends each child once, with the create-only
// server-side apply cueop sends for a child it has not seen
// (apply.Applier.Apply with no live object). It has cueop's workers (4 per
// replica) and client limits (operator.DefaultQPS and DefaultBurst, one
// client per replica, each with controller-runtime's token bucket per
// resource type). The floor is the time from the first create until every
// Pod is Ready.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/bench/harness"
	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// floorRun measures the floor for n CRs and replicas clients on a control
// plane of its own, stopped before it returns.
func (b *scaleBench) floorRun(ctx context.Context, sc scaleConfig, n, replicas int) (time.Duration, map[string]float64, error) {
	ctx, cancel := context.WithCancel(ctx) // ends the floor's clients, whatever ends the run
	defer cancel()
	stop, err := b.lab.startCluster(ctx, sc.clusterOptions(n, replicas))
	defer stop()
	if err != nil {
		return 0, nil, err
	}
	tmpl, err := b.templatesCopy()
	if err != nil {
		return 0, nil, err
	}
	if err := b.lab.installCRD(ctx, tmpl); err != nil {
		return 0, nil, err
	}
	// No operator serves the conversion webhook here: the API server
	// converts for free instead (harness.SetConversion).
	if _, err := harness.SetConversion(ctx, b.lab.rest, b.lab.crd, false); err != nil {
		return 0, nil, err
	}
	kind, err := harness.LoadKind(tmpl)
	if err != nil {
		return 0, nil, err
	}
	sp, err := b.lab.spread(ctx, "bench-floor-", n, sc.PerNamespace)
	if err != nil {
		return 0, nil, err
	}
	pods, err := b.lab.trackReadyPods(ctx, sp.served())
	if err != nil {
		return 0, nil, err
	}
	defer pods.stop()
	fl, err := newFloor(b.lab.cluster.Config, kind, replicas, n)
	if err != nil {
		return 0, nil, err
	}
	start, cpu0 := time.Now(), b.lab.cpuSnapshot()
	fl.run(ctx, func(created func(int, *unstructured.Unstructured)) error {
		return b.lab.createCRsThen(ctx, sp, n, created)
	})
	allAt, err := waitFor(ctx, sc.timeoutFor(n), func() bool { return pods.readyCount() >= 3*n || fl.failed() })
	if err == nil {
		err = fl.err()
	}
	if err != nil {
		return 0, nil, fmt.Errorf("floor: %d of %d Pods Ready: %w", pods.readyCount(), 3*n, err)
	}
	return allAt.Sub(start), cpu0.perCR(b.lab.cpuSnapshot(), n), nil
}

// floor applies the children of the CRs it is given.
type floor struct {
	kind     *template.Kind
	appliers []*apply.Applier
	queues   []chan *unstructured.Unstructured
	mu       sync.Mutex
	errs     []error
}

func newFloor(cfg *rest.Config, kind *template.Kind, replicas, n int) (*floor, error) {
	fl := &floor{kind: kind}
	for range replicas {
		c := rest.CopyConfig(cfg)
		c.QPS, c.Burst = operator.DefaultQPS, operator.DefaultBurst
		cl, err := client.New(c, client.Options{})
		if err != nil {
			return nil, err
		}
		// The same request as cueop's, answered the same way.
		responses, err := apply.NewMetadataResponses(c, nil, cl.RESTMapper())
		if err != nil {
			return nil, err
		}
		fl.appliers = append(fl.appliers, &apply.Applier{Client: cl, Responses: responses})
		fl.queues = append(fl.queues, make(chan *unstructured.Unstructured, n))
	}
	return fl, nil
}

// run starts the workers, then create, which calls back with each CR it
// created; CR i goes to client i mod replicas.
func (fl *floor) run(ctx context.Context, create func(func(int, *unstructured.Unstructured)) error) {
	for r, q := range fl.queues {
		for range maxConcurrent {
			go fl.work(ctx, fl.appliers[r], q)
		}
	}
	go func() {
		err := create(func(i int, cr *unstructured.Unstructured) { fl.queues[i%len(fl.queues)] <- cr })
		for _, q := range fl.queues {
			close(q)
		}
		if err != nil {
			fl.fail(fmt.Errorf("create RedisClusters: %w", err))
		}
	}()
}

func (fl *floor) work(ctx context.Context, a *apply.Applier, q <-chan *unstructured.Unstructured) {
	for cr := range q {
		res, err := render.Render(fl.kind, cr, nil, render.Options{})
		if err != nil {
			fl.fail(fmt.Errorf("render %s: %w", cr.GetName(), err))
			continue
		}
		for _, c := range res.Children {
			if _, err := a.Apply(ctx, c.Object, nil); err != nil {
				fl.fail(err)
			}
		}
	}
}

func (fl *floor) fail(err error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.errs = append(fl.errs, err)
}

func (fl *floor) failed() bool { return fl.err() != nil }

// err is the first few errors, joined.
func (fl *floor) err() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return errors.Join(fl.errs[:min(len(fl.errs), 3)]...)
}

// readyPods counts the Ready Pods of one namespace through a watch whose
// cache keeps only each Pod's Ready condition.
type readyPods struct {
	mu     sync.Mutex
	ready  map[string]bool
	n      int
	cancel context.CancelFunc
}

func (l *lab) trackReadyPods(ctx context.Context, ns string) (*readyPods, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &readyPods{ready: map[string]bool{}, cancel: cancel}
	f := informers.NewSharedInformerFactoryWithOptions(l.cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	if err := inf.SetTransform(podReadyOnly); err != nil {
		cancel()
		return nil, err
	}
	if err := startInformer(ctx, inf, f.Start, t.set, t.del); err != nil {
		cancel()
		return nil, fmt.Errorf("Pod watch in %s: %w", ns, err)
	}
	return t, nil
}

// podReadyOnly strips a Pod to its name and Ready condition.
func podReadyOnly(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion}}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}

func (t *readyPods) set(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ready := len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Status == corev1.ConditionTrue
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready[p.Name] != ready {
		if ready {
			t.n++
		} else {
			t.n--
		}
	}
	t.ready[p.Name] = ready
}

func (t *readyPods) del(obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.ready[p.Name] {
			t.n--
		}
		delete(t.ready, p.Name)
	}
}

func (t *readyPods) readyCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

func (t *readyPods) stop() { t.cancel() }
