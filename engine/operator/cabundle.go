package operator

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/wellknown"
)

// pointLiveCRD writes the conversion endpoint (address and CA bundle) into
// the live CRD named crdName when cueop does not install the CRDs itself
// (config/ applies them from crds/, without a caBundle): only into a CRD
// that converts by webhook, only the clientConfig, and only when it
// differs, so that a restart writes nothing. A CRD not there yet is left
// alone: it is pointed at the kind's next reload. A CRD another operator
// instance holds (taken over since) is not written: an error says so.
func (c *crdWriter) pointLiveCRD(ctx context.Context, crdName string) error {
	return c.pointLiveIf(ctx, crdName, false)
}

// pointLiveIf is pointLiveCRD; with lost, only a CRD whose clientConfig
// lost its CA bundle (replaced from crds/) is written: the periodic check
// must not take a CRD from another endpoint that holds a bundle of its own
// (replicas each serving with their own local CA rewrote it in turn every
// 20 s, and each write of a CRD restarts every watch of its CRs).
func (c *crdWriter) pointLiveIf(ctx context.Context, crdName string, lost bool) error {
	e := c.conversion.endpoint()
	if e == nil || e.Certs == nil {
		return nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.reader.Get(ctx, client.ObjectKey{Name: crdName}, live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if h := live.GetAnnotations()[wellknown.AnnotationOperator]; h != "" && h != c.instance {
		// Taken over by another instance (holder.go) since this one
		// served it: the CRD is the holder's to point, and the kind stops
		// serving here at its next reload.
		return fmt.Errorf("crd %s: conversion webhook: not pointed here: the operator %s holds it (annotation %s), not this one (%s)", crdName, h, wellknown.AnnotationOperator, c.instance)
	}
	want := live.DeepCopy()
	if err := e.Point(ctx, want); err != nil {
		return err
	}
	path := []string{"spec", "conversion", "webhook", "clientConfig"}
	have, _, _ := unstructured.NestedMap(live.Object, path...)
	cc, ok, _ := unstructured.NestedMap(want.Object, path...)
	if !ok || equality.Semantic.DeepEqual(have, cc) {
		return nil // no webhook conversion, or pointed already
	}
	if bundle, _ := have["caBundle"].(string); lost && bundle != "" {
		return nil // pointed elsewhere, with a bundle: not lost
	}
	patch := map[string]any{"url": nil, "service": nil} // the one not given goes
	for k, v := range cc {
		patch[k] = v
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{"clientConfig": patch}}}})
	if err != nil {
		return err
	}
	if err := c.client.Patch(ctx, live, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("crd %s: conversion webhook: write the CA bundle: %w", crdName, err)
	}
	c.log.Info("conversion webhook: CA bundle written into the CRD", "crd", crdName)
	return nil
}

// pointLive is pointLiveCRD, its error logged: the kind serves on, and
// reads at its other versions fail until the bundle is written.
func (c *crdWriter) pointLive(ctx context.Context, crdName string) {
	if err := c.pointLiveCRD(ctx, crdName); err != nil {
		c.log.Error(err, "conversion webhook: CA bundle not written", "crd", crdName)
	}
}
