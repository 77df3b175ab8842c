package operator

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
)

// The key of the proofs released children carry (reconcile/converge.go)
// is the operator's secret: Options.ReleaseKey when given (cueop run
// --release-key-file), else the key in the Secret ReleaseKeySecret of
// Options.ReleaseKeyNamespace, which the operator creates, with a random
// key, at its first release or adoption by mark. Every replica and every
// restart reads the same Secret (the first to create it wins, the others
// read it), so a child one released another adopts. Deleting the Secret
// forgets every release made: a CR of the name then stalls with
// ChildConflict until the child is adopted otherwise (adopt:
// "uncontrolled") or deleted.

// ReleaseKeySecret is the name of the Secret that holds the release key,
// under the data key ReleaseKeyField.
const (
	ReleaseKeySecret = "cueop-release-key"
	ReleaseKeyField  = "key"
)

// MinReleaseKeyBytes is the shortest release key accepted.
const MinReleaseKeyBytes = 32

// DefaultReleaseKeyNamespace is the namespace of the release key Secret
// when Options.ReleaseKeyNamespace is empty (a local cluster, tests):
// cueop run sets it to the pod's namespace.
const DefaultReleaseKeyNamespace = "default"

// releaseKeys loads the release key once; a failed load is tried again at
// the next need.
type releaseKeys struct {
	given     []byte // Options.ReleaseKey
	namespace string // Options.ReleaseKeyNamespace
	reader    client.Reader
	client    client.Client
	log       logr.Logger

	mu     sync.Mutex
	loaded []byte
}

// key is the release key (reconcile.Host.ReleaseKey).
func (k *releaseKeys) key(ctx context.Context) ([]byte, error) {
	if len(k.given) > 0 {
		if len(k.given) < MinReleaseKeyBytes {
			return nil, fmt.Errorf("the release key given is %d bytes, fewer than %d", len(k.given), MinReleaseKeyBytes)
		}
		return k.given, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded != nil {
		return k.loaded, nil
	}
	key, err := k.load(ctx)
	if err != nil {
		return nil, err
	}
	k.loaded = key
	return key, nil
}

// load reads the release key Secret, creating it when absent.
func (k *releaseKeys) load(ctx context.Context) ([]byte, error) {
	ns := k.namespace
	if ns == "" {
		ns = DefaultReleaseKeyNamespace
	}
	name := fmt.Sprintf("Secret %s/%s", ns, ReleaseKeySecret)
	s := &corev1.Secret{}
	err := k.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ReleaseKeySecret}, s)
	if apierrors.IsNotFound(err) {
		key := make([]byte, MinReleaseKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ReleaseKeySecret, Labels: map[string]string{"app.kubernetes.io/name": "cueop"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{ReleaseKeyField: key},
		}
		err = k.client.Create(ctx, s)
		if err == nil {
			k.log.Info("release key created", "secret", ns+"/"+ReleaseKeySecret)
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create %s: %w", name, err)
		}
		s = &corev1.Secret{} // another replica created it first
		err = k.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ReleaseKeySecret}, s)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	key := s.Data[ReleaseKeyField]
	if len(key) < MinReleaseKeyBytes {
		return nil, fmt.Errorf("%s: data %q holds %d bytes, fewer than %d", name, ReleaseKeyField, len(key), MinReleaseKeyBytes)
	}
	return key, nil
}
