package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Client is a controller-runtime client of the cluster's admin config.
func Client(t testing.TB) client.Client {
	t.Helper()
	c, err := client.New(Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Get reads the object of gvk named ns/name through c, failing the test on
// an error.
func Get(t testing.TB, c client.Client, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o := Lookup(t, c, gvk, ns, name)
	if o == nil {
		t.Fatalf("%s %s/%s not found", gvk.Kind, ns, name)
	}
	return o
}

// Lookup reads the object of gvk named ns/name through c: nil when it does
// not exist.
func Lookup(t testing.TB, c client.Client, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, o)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// CreateWhenServed creates obj once the API server serves its kind (a CRD
// an operator installs), retrying until timeout with a fresh client (its
// REST mapper knows the kind once it is served), and returns that client.
func CreateWhenServed(t testing.TB, obj *unstructured.Unstructured, timeout time.Duration) client.Client {
	t.Helper()
	c := Client(t)
	Eventually(t, timeout, func() string {
		if err := c.Create(context.Background(), obj.DeepCopy()); err != nil {
			c = Client(t)
			return err.Error()
		}
		return ""
	})
	return c
}

// Object is a new object of gvk named ns/name holding fields (such as
// "spec"; nil for none), to create or apply.
func Object(gvk schema.GroupVersionKind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

// ConfigMapData reads the value of key in the data of the ConfigMap
// ns/name through c: for a test waiting for a child to say what it
// should. The error is the read's, or says that the ConfigMap has no key.
func ConfigMapData(c client.Client, ns, name, key string) (string, error) {
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return "", err
	}
	v, found, err := unstructured.NestedString(cm.Object, "data", key)
	if err == nil && !found {
		err = fmt.Errorf("ConfigMap %s/%s has no data.%s", ns, name, key)
	}
	return v, err
}
