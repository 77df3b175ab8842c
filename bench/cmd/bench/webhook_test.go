package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWebhookKeptAcrossRestarts: the cueop processes started one after the
// other on a control plane get the same webhook directory, which loads into
// the same port and CA bundle; another control plane gets another.
func TestWebhookKeptAcrossRestarts(t *testing.T) {
	o := &operators{session: &session{tmp: t.TempDir()}}
	first, err := o.webhookArgs("a/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	again, err := o.webhookArgs("a/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	other, err := o.webhookArgs("b/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0] != "-webhook-dir" || first[1] != again[1] || first[1] == other[1] {
		t.Fatalf("webhook arguments: %v, then %v, another control plane %v", first, again, other)
	}
	c, err := loadWebhookDir(first[1])
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(first[1], webhookCA))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port == 0 || c.Host != "127.0.0.1" || !bytes.Equal(c.Endpoint.Certs.CABundle(), ca) {
		t.Fatalf("loaded webhook: port %d, host %s, CA bundle the file's: %v", c.Port, c.Host, bytes.Equal(c.Endpoint.Certs.CABundle(), ca))
	}
	if _, err := c.Endpoint.Certs.GetCertificate(nil); err != nil {
		t.Fatalf("no serving certificate: %v", err)
	}
}
