package operator_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestWebhookCertRotation: the Rotator makes the webhook's Secret (a CA and
// a serving certificate for the Service's names), leaves it while it is
// fresh, renews the serving certificate once two thirds of its life are
// gone (same CA), and the CA near its end (the bundle then trusts the new
// and the old CA).
func TestWebhookCertRotation(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := newClient(t)
	now := time.Now()
	certs := &webhook.Certs{}
	r := &webhook.Rotator{Client: c, Reader: c, Namespace: ns, Name: webhook.SecretName,
		Hosts: webhook.ServiceHosts(ns, webhook.ServiceName), Certs: certs, Now: func() time.Time { return now }}
	ctx := context.Background()
	secret := func() *corev1.Secret {
		s := &corev1.Secret{}
		must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: webhook.SecretName}, s))
		return s
	}
	must(t, r.Sync(ctx))
	first := secret()
	if len(certs.CABundle()) == 0 || !bytes.Equal(certs.CABundle(), first.Data["ca.crt"]) {
		t.Fatalf("bundle %q, want the Secret's ca.crt", certs.CABundle())
	}
	must(t, r.Sync(ctx))
	if secret().ResourceVersion != first.ResourceVersion {
		t.Error("a fresh certificate was rewritten")
	}

	now = now.Add(webhook.ServingLifetime * 3 / 4)
	must(t, r.Sync(ctx))
	renewed := secret()
	if bytes.Equal(renewed.Data["tls.crt"], first.Data["tls.crt"]) || !bytes.Equal(renewed.Data["ca.crt"], first.Data["ca.crt"]) {
		t.Error("serving certificate not renewed under the same CA")
	}

	now = now.Add(webhook.CALifetime - webhook.RenewCABefore/2)
	must(t, r.Sync(ctx))
	rotated := secret()
	if bytes.Equal(rotated.Data["ca.crt"], first.Data["ca.crt"]) {
		t.Fatal("CA not renewed near its end")
	}
	want := append(append([]byte{}, rotated.Data["ca.crt"]...), first.Data["ca.crt"]...)
	if !bytes.Equal(certs.CABundle(), want) {
		t.Error("bundle after the CA's renewal is not the new CA then the old one")
	}
}
