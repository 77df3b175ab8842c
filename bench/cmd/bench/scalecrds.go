package main

// The last phase of `bench scale`: cueop's resident memory at start in a
// cluster holding many CRDs that are none of its kinds, each with objects
// (kro's issue 724 reports about 2 GB at start with some 200 CRDs), against
// the same cluster before they were created.

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster"
)

// crdResult is cueop's memory at start, settled with no CR of its kinds,
// in an empty cluster and with CRDs unrelated CRDs of Objects objects each.
type crdResult struct {
	CRDs, Objects       int
	EmptyRSS, WithRSS   uint64
	EmptyHeap, WithHeap uint64
	Err                 string
}

const unrelatedGroup = "unrelated.bench.cueop.dev"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// unrelatedCRDs starts cueop (every namespace) on a fresh control plane,
// then again once the unrelated CRDs and their objects exist.
func (b *scaleBench) unrelatedCRDs(ctx context.Context, sc scaleConfig) (crdResult, error) {
	res := crdResult{CRDs: sc.CRDs, Objects: sc.CRDObjects}
	stop, err := b.lab.startCluster(ctx, localcluster.Options{Nodes: 1})
	defer stop()
	if err != nil {
		return res, err
	}
	tmpl, err := b.templatesCopy()
	if err != nil {
		return res, err
	}
	if err := b.lab.installCRD(ctx, tmpl); err != nil {
		return res, err
	}
	if res.EmptyRSS, res.EmptyHeap, err = b.memoryAtStart(ctx, "crds-empty", tmpl); err != nil {
		return res, err
	}
	b.logf("unrelated CRDs: cueop at start in an empty cluster: %s; creating %d CRDs of %d objects", mib(res.EmptyRSS), sc.CRDs, sc.CRDObjects)
	start := time.Now()
	if err := b.lab.createUnrelated(ctx, sc.CRDs, sc.CRDObjects); err != nil {
		return res, err
	}
	b.logf("unrelated CRDs: created in %.1fs", time.Since(start).Seconds())
	res.WithRSS, res.WithHeap, err = b.memoryAtStart(ctx, "crds-with", tmpl)
	b.logf("unrelated CRDs: cueop at start beside them: %s", mib(res.WithRSS))
	return res, err
}

// memoryAtStart starts cueop on every namespace and returns its peak RSS
// (VmHWM, workers' included) and heap in use once it synced and settled.
func (b *scaleBench) memoryAtStart(ctx context.Context, name, tmpl string) (rss, heap uint64, err error) {
	p, err := b.ops.startOperator(ctx, "cueop", name, "", tmpl)
	if err != nil {
		return 0, 0, err
	}
	defer p.stop()
	st, err := settle(ctx, p, time.Minute)
	if err != nil {
		return 0, 0, err
	}
	return uint64(st.MaxRSS), st.PeakHeapInuse, nil
}

// createUnrelated creates n namespaced CRDs and objects of each in a
// namespace of their own.
func (l *lab) createUnrelated(ctx context.Context, n, objects int) error {
	err := parallel(ctx, n, 8, func(ctx context.Context, i int) error {
		_, err := l.dyn.Resource(crdGVR).Create(ctx, unrelatedCRD(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("create CRDs: %w", err)
	}
	ns, err := l.namespace(ctx, "bench-unrelated-")
	if err != nil {
		return err
	}
	return parallel(ctx, n*objects, 16, func(ctx context.Context, j int) error {
		return l.createUnrelatedObject(ctx, ns, j/objects, j%objects)
	})
}

// createUnrelatedObject creates object k of CRD i, retrying while the API
// server does not serve the CRD yet.
func (l *lab) createUnrelatedObject(ctx context.Context, ns string, i, k int) error {
	gvr := schema.GroupVersionResource{Group: unrelatedGroup, Version: "v1", Resource: fmt.Sprintf("things%03d", i)}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": unrelatedGroup + "/v1", "kind": fmt.Sprintf("Thing%03d", i),
		"metadata": map[string]any{"name": fmt.Sprintf("thing-%03d", k), "namespace": ns,
			"labels": map[string]any{"app": "unrelated", "index": fmt.Sprint(k)}},
		"spec": map[string]any{"image": "example.com/unrelated:1.0", "replicas": int64(k % 5),
			"config": strings.Repeat("key=value\n", 50)},
	}}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := l.dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// unrelatedCRD is the i-th unrelated CRD: namespaced, one version whose
// spec keeps any field.
func unrelatedCRD(i int) *unstructured.Unstructured {
	plural := fmt.Sprintf("things%03d", i)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": template.CRDName(plural, unrelatedGroup)},
		"spec": map[string]any{
			"group": unrelatedGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": fmt.Sprintf("thing%03d", i), "kind": fmt.Sprintf("Thing%03d", i)},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object", "x-kubernetes-preserve-unknown-fields": true,
					}},
				}},
			}},
		},
	}}
}
