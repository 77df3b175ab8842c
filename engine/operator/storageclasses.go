package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// bindingModeTTL is how long a StorageClass's volumeBindingMode is
// remembered. The field is immutable, so only a class deleted and created
// again under its name can change it; a claim asks at most once per class
// and TTL.
const bindingModeTTL = 5 * time.Minute

// bindingModes reads the volumeBindingMode of StorageClasses for the gates
// (reconcile.BindingModes), from the API server, only when a gate meets a
// Pending claim: get on storageclasses, no watch, no cache of every class.
type bindingModes struct {
	reader client.Reader
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]bindingMode
}

type bindingMode struct {
	mode string
	at   time.Time
}

func newBindingModes(reader client.Reader) *bindingModes {
	return &bindingModes{reader: reader, now: time.Now, seen: map[string]bindingMode{}}
}

// Mode is the volumeBindingMode of class (Immediate when unset, as the API
// server defaults it).
func (b *bindingModes) Mode(ctx context.Context, class string) (string, error) {
	b.mu.Lock()
	m, ok := b.seen[class]
	b.mu.Unlock()
	if ok && b.now().Sub(m.at) < bindingModeTTL {
		return m.mode, nil
	}
	sc := &storagev1.StorageClass{}
	if err := b.reader.Get(ctx, client.ObjectKey{Name: class}, sc); err != nil {
		return "", fmt.Errorf("StorageClass %s: %w", class, err)
	}
	mode := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		mode = string(*sc.VolumeBindingMode)
	}
	b.mu.Lock()
	b.seen[class] = bindingMode{mode: mode, at: b.now()}
	b.mu.Unlock()
	return mode, nil
}
