package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/webhook"
)

// A deployed cueop keeps its conversion webhook's address (its Service)
// and certificate (its Secret) across restarts, so a restart writes nothing
// into the CRD. The bench's operators serve the webhook on 127.0.0.1 with
// certificates of their own: without more, each new process would write a
// new address and CA bundle into the CRD as it starts, and that write
// restarts every watch of the CRs in the API server, in the middle of the
// resync being measured. So the driver gives the cueop processes it starts
// one after the other on a control plane the same port and certificates
// (webhookArgs), as a deployment's restart has, and points the CRD at them
// before it starts one (startOperator: the process finds its CRD pointed).
// Before it deletes a namespace of CRs with no cueop process running, it
// sets the CRD's conversion to None (deleteNamespace: the API server could
// not read the CRs back through a webhook nobody serves).

// webhookFiles are the names of the files in a webhook directory.
const (
	webhookCA   = "ca.crt"
	webhookCert = "tls.crt"
	webhookKey  = "tls.key"
	webhookPort = "port"
)

// webhookArgs are the operator's arguments for the conversion webhook of a
// cueop process on the control plane of kubeconfig: the port and
// certificates of the last cueop process there, unless one still runs
// (then new ones: two processes cannot share a port).
func (o *operators) webhookArgs(kubeconfig string) ([]string, error) {
	if o.webhooks == nil {
		o.webhooks = map[string]string{}
	}
	dir, ok := o.webhooks[kubeconfig]
	if !ok || o.cueopRunning() {
		var err error
		if dir, err = newWebhookDir(o.tmp); err != nil {
			return nil, err
		}
		o.webhooks[kubeconfig] = dir
	}
	return []string{"-webhook-dir", dir}, nil
}

// newWebhookDir writes a CA, a serving certificate for 127.0.0.1 and a free
// port into a new directory under parent.
func newWebhookDir(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, "webhook-")
	if err != nil {
		return "", err
	}
	now := time.Now()
	ca, err := webhook.NewCA("cueop-bench-ca", now, webhook.CALifetime)
	if err != nil {
		return "", err
	}
	serving, err := webhook.NewServing(ca, []string{"127.0.0.1", "localhost"}, now, webhook.ServingLifetime)
	if err != nil {
		return "", err
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	for name, b := range map[string][]byte{webhookCA: ca.Cert, webhookCert: serving.Cert, webhookKey: serving.Key, webhookPort: []byte(strconv.Itoa(port))} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// loadWebhookDir is the conversion webhook a directory of newWebhookDir
// describes.
func loadWebhookDir(dir string) (*operator.Conversion, error) {
	files := map[string][]byte{}
	for _, name := range []string{webhookCA, webhookCert, webhookKey, webhookPort} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("webhook directory: %w", err)
		}
		files[name] = b
	}
	port, err := strconv.Atoi(string(files[webhookPort]))
	if err != nil {
		return nil, fmt.Errorf("webhook directory %s: port: %w", dir, err)
	}
	certs := &webhook.Certs{}
	if err := certs.Set(webhook.KeyPair{Cert: files[webhookCert], Key: files[webhookKey]}, files[webhookCA]); err != nil {
		return nil, fmt.Errorf("webhook directory %s: %w", dir, err)
	}
	return &operator.Conversion{Host: "127.0.0.1", Port: port,
		Endpoint: webhook.Endpoint{URL: webhook.LocalURL("127.0.0.1", port), Certs: certs}}, nil
}
