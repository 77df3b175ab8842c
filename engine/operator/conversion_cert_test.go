package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/webhook"
	"github.com/cueop/cueop/internal/testkit"
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

// certKind is a kind of group cert.test.example, one version, whose CR is
// Ready at once.
func certKind(kind string) string {
	return `package ` + strings.ToLower(kind) + `

resource: {group: "cert.test.example", version: "v1", kind: "` + kind + `"}
#Spec: {}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
observed: [string]: {...}
children: {}
status: {}
ready: true
`
}

// TestWebhookCertOnlyOnceAKindConverts: an operator serving only kinds
// with one version, its webhook's Service in a namespace that does not
// exist, sends no request for the certificate Secret (it read and wrote it
// every 10 s, logging an error each time). Once a kind converts, it tries,
// and the failure is logged once, naming the missing namespace, while the
// retries back off.
func TestWebhookCertOnlyOnceAKindConverts(t *testing.T) {
	ns := clustertest.Namespace(t)
	clustertest.DeleteCRDsAtEnd(t, "plains.cert.test.example", "dials.cert.test.example")
	absent := "absent-" + ns
	cfg, reqs := testkit.CountRequests(clustertest.Config())
	secretRequests := func() int {
		return reqs.Count(func(r testkit.Request) bool { return strings.Contains(r.Path, "/namespaces/"+absent+"/secrets") })
	}
	conv, err := operator.LocalConversion()
	must(t, err)
	conv.Endpoint = webhook.Endpoint{ServiceNamespace: absent, ServiceName: webhook.ServiceName, Certs: &webhook.Certs{}}
	conv.New = func(k *template.Kind) (webhook.Converter, error) { // Dial converts, Plain has one version
		if k.Resource.Kind == "Dial" {
			return webhook.Rename{HubVersion: "v1", Hub: "a", Spoke: "b"}, nil
		}
		return nil, nil
	}
	dir := kindsDir(t, map[string]string{"plain": certKind("Plain")})
	opts := operatortest.Options(dir, ns)
	opts.Conversion = conv
	cfg, a := operatortest.Observe(cfg, &opts)
	op, err := operator.New(cfg, opts)
	must(t, err)
	mgr := op.Manager()
	// As cueop run adds it (cmd/cueop/webhook.go).
	must(t, mgr.Add(&webhook.Rotator{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: absent, Name: webhook.SecretName,
		Hosts: webhook.ServiceHosts(absent, webhook.ServiceName), Certs: conv.Endpoint.Certs,
		Needed: op.ConversionNeeded(), Log: mgr.GetLogger().WithName("webhook-cert")}))
	operatortest.Run(t, op)

	clustertest.WaitEstablished(t, 60*time.Second, "plains.cert.test.example")
	mustKubectl(t, "apiVersion: cert.test.example/v1\nkind: Plain\nmetadata: {name: p, namespace: "+ns+"}\nspec: {}\n", "apply", "-f", "-")
	mustKubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "plains.cert.test.example/p", "--timeout=90s")
	if n := secretRequests(); n != 0 {
		t.Fatalf("%d requests for the Secret %s/%s while no kind converts", n, absent, webhook.SecretName)
	}

	// A kind that converts: the certificate is needed now.
	testkit.WriteKind(t, dir, "dial", certKind("Dial"))
	eventually(t, 60*time.Second, func() string {
		if n := secretRequests(); n < 4 { // the first attempt (a read, a create) and a retry
			return fmt.Sprintf("%d requests for the Secret, want the first attempt and a retry", n)
		}
		return ""
	})
	var errs []string
	// The errors logged as errors: a retry with the same error is logged
	// only at V(1) ("still failing"), which a test's logger records too.
	for _, l := range a.Logged("conversion webhook certificate: retrying with backoff") {
		if l.Values["error"] != "" {
			errs = append(errs, l.Values["error"])
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "namespace "+absent+" does not exist") {
		t.Errorf("errors logged for the certificate: %q, want one naming namespace %s missing", errs, absent)
	}
}

// TestConversionPointedWithoutInstall: cueop run as config/ runs it, with
// --install-crds=false and the CRDs applied from crds/ (a Service
// clientConfig, no caBundle): cueop writes its endpoint and CA bundle into
// the live CRD, so that reads at v2 convert, and a restart writes nothing
// more into it; the CRD replaced from crds/ again, cueop writes it again.
func TestConversionPointedWithoutInstall(t *testing.T) {
	const crd = "redisclusters.cache.example.com"
	ns := clustertest.Namespace(t)
	b := testkit.Read(t, testkit.Root(), "crds/"+crd+".yaml")
	if strings.Contains(b, "caBundle") || !strings.Contains(b, "strategy: Webhook") {
		t.Fatalf("crds/%s.yaml: want a Webhook conversion without a caBundle", crd)
	}
	// A CRD left by an earlier test holds another clientConfig: start from crds/ alone.
	mustKubectl(t, "", "delete", "--ignore-not-found", "--wait", "--timeout=60s", "crd/"+crd)
	installCRD(t, string(b), crd)

	dir := copyTemplates(t)
	for _, other := range []string{"blog", "staticsite", "webapp"} { // their CRDs are not applied
		testkit.Remove(t, dir, other)
	}
	opts := operatortest.Options(dir, ns)
	opts.InstallCRDs = false
	_, stop := operatortest.StartObserved(t, clustertest.Config(), opts)
	mustKubectl(t, redisYAML(ns, "pointed", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 90*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "redisclusters.v2.cache.example.com", "pointed", "-o", "jsonpath={.spec.size}")
		if err != nil || out != "2" {
			return fmt.Sprintf("read at v2: %q %v", out, err)
		}
		return ""
	})
	mustKubectl(t, "", "-n", ns, "wait", "--for=condition=Ready", "redisclusters.v2.cache.example.com/pointed", "--timeout=90s")
	rv := mustKubectl(t, "", "get", "crd", crd, "-o", "jsonpath={.metadata.resourceVersion}")
	stop()
	act, stop := operatortest.StartObserved(t, clustertest.Config(), opts)
	defer stop()
	eventually(t, 90*time.Second, func() string {
		if act.ReconcilesOf("namespace", ns) == 0 {
			return "the restarted operator has not reconciled pointed"
		}
		return ""
	})
	act.Settled(t, 0, 60*time.Second)
	if got := mustKubectl(t, "", "get", "crd", crd, "-o", "jsonpath={.metadata.resourceVersion}"); got != rv {
		t.Errorf("a restart with the same endpoint wrote the CRD again (resourceVersion %s -> %s)", rv, got)
	}

	// A GitOps tool replaces the CRD with crds/ (its bundle gone): cueop
	// writes it again, and reads at v2 convert again.
	mustKubectl(t, string(b), "replace", "-f", "-")
	eventually(t, 90*time.Second, func() string {
		out, err := kubectl(t, "", "-n", ns, "get", "redisclusters.v2.cache.example.com", "pointed", "-o", "jsonpath={.spec.size}")
		if err != nil || out != "2" {
			return fmt.Sprintf("read at v2 after the CRD was replaced from crds/: %q %v", out, err)
		}
		return ""
	})
}
