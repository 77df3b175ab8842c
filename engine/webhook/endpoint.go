package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Service is the default Service of the endpoint in a cluster (config/).
const (
	ServiceNamespace = "cueop-system"
	ServiceName      = "cueop-webhook"
	SecretName       = "cueop-webhook-cert"
)

// Endpoint is where the API server reaches the conversion endpoint, as a
// CRD's spec.conversion.webhook.clientConfig says it.
type Endpoint struct {
	// URL, when set, is the endpoint's address (`cueop dev`, tests:
	// https://127.0.0.1:<port>/convert); else Service is.
	URL string
	// ServiceNamespace and ServiceName name the Service in front of the
	// replicas (port 443, path /convert); the defaults are cueop-system
	// and cueop-webhook.
	ServiceNamespace, ServiceName string
	// Certs give the caBundle.
	Certs *Certs
}

// LocalURL is the endpoint's URL on host:port.
func LocalURL(host string, port int) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port)) + Path
}

// Point makes the conversion of crd (a CRD as crdgen.ToUnstructured gives
// it), when its strategy is Webhook, reach e with e's CA bundle. It waits
// for the bundle (a Secret being read or made). A CRD without a webhook
// conversion is left as it is.
func (e *Endpoint) Point(ctx context.Context, crd *unstructured.Unstructured) error {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if strategy != "Webhook" {
		return nil
	}
	if e == nil || e.Certs == nil {
		return fmt.Errorf("crd %s: conversion webhook: cueop serves none here (no webhook options)", crd.GetName())
	}
	bundle, err := e.Certs.WaitBundle(ctx)
	if err != nil {
		return fmt.Errorf("crd %s: %w", crd.GetName(), err)
	}
	cc := map[string]any{"caBundle": base64.StdEncoding.EncodeToString(bundle)}
	if e.URL != "" {
		cc["url"] = e.URL
	} else {
		cc["service"] = map[string]any{"namespace": or(e.ServiceNamespace, ServiceNamespace),
			"name": or(e.ServiceName, ServiceName), "path": Path, "port": int64(443)}
	}
	if err := unstructured.SetNestedField(crd.Object, cc, "spec", "conversion", "webhook", "clientConfig"); err != nil {
		return fmt.Errorf("crd %s: conversion webhook: %w", crd.GetName(), err)
	}
	versions, found, _ := unstructured.NestedStringSlice(crd.Object, "spec", "conversion", "webhook", "conversionReviewVersions")
	if !found || len(versions) == 0 {
		return errors.Join(unstructured.SetNestedStringSlice(crd.Object, []string{"v1"}, "spec", "conversion", "webhook", "conversionReviewVersions"))
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
