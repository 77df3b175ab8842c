package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// StorageReads is how many discovery reads in a row, storageReadPeriod
// apart, must give the new storage version's hash before the first
// rewrite.
const StorageReads = 10

const storageReadPeriod = 100 * time.Millisecond

// waitStorage waits until discovery gives to's storage version hash for
// crd's resource StorageReads times in a row: from then on, a CR written
// is stored at to (an API server's handler takes the CRD's change before
// its discovery does). With several API servers behind one address each
// takes the change when its own CRD watch does, and one answering does
// not mean all do: with Config set, each read dials anew, so that a load
// balancer spreads the reads over the API servers, and the reads span a
// second of their lag. It is a bound, not a proof: an API server the reads
// miss, or that lags longer, can still store a CR at the old version
// during the pass. Kubernetes' StorageVersion API
// (internal.apiserver.k8s.io), which records each API server's encoding
// version, covers built-in resources only; apiextensions-apiserver
// publishes none for custom resources.
func (m *Migrator) waitStorage(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, to string) error {
	if m.Discovery == nil && m.Config == nil {
		return nil
	}
	gv := crd.Spec.Group + "/" + to
	want := storageVersionHash(crd.Spec.Group, to, crd.Spec.Names.Kind)
	inARow, last := 0, ""
	err := wait.PollUntilContextTimeout(ctx, storageReadPeriod, time.Minute, true, func(context.Context) (bool, error) {
		got, err := m.storageHash(gv, crd.Spec.Names.Plural)
		switch {
		case err != nil:
			inARow, last = 0, err.Error()
		case got != want:
			inARow, last = 0, "storage version hash "+got
		default:
			inARow++
		}
		return inARow >= StorageReads, nil
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: the API server does not store at %s yet (discovery of %s, last read: %s): %w", crd.Name, to, gv, last, err)
	}
	return nil
}

// storageHash reads the storage version hash of resource in gv's
// discovery, over a new connection when Config is set.
func (m *Migrator) storageHash(gv, resource string) (string, error) {
	d := m.Discovery
	if m.Config != nil {
		cfg := rest.CopyConfig(m.Config)
		if cfg.Proxy == nil {
			// A function: client-go caches no transport for it, so this
			// one dials anew.
			cfg.Proxy = http.ProxyFromEnvironment
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return "", err
		}
		defer utilnet.CloseIdleConnectionsFor(hc.Transport)
		if d, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, hc); err != nil {
			return "", err
		}
	}
	list, err := d.ServerResourcesForGroupVersion(gv)
	if err != nil {
		return "", err
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return r.StorageVersionHash, nil
		}
	}
	return "", fmt.Errorf("%s: no resource %s", gv, resource)
}

// storageVersionHash is the API server's hash of a storage version
// (k8s.io/apiserver/pkg/endpoints/discovery.StorageVersionHash).
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}
