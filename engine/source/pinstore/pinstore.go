// Package pinstore keeps the record of the template modules' digests
// (engine/source's pinned.json: the digests each reference resolved to,
// those the operator accepted, and the dependencies each pin's first
// fetch resolved) in a ConfigMap of the operator's namespace, where it
// outlives the module cache: source.Options.Record.
package pinstore

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// DefaultName is the ConfigMap cueop run keeps the record in.
const DefaultName = "cueop-pins"

// Key is the ConfigMap's key holding the record, in pinned.json's
// encoding.
const Key = "pinned.json"

// ConfigMap is the record kept in the ConfigMap Namespace/Name. It needs
// get and update on that ConfigMap, and create on ConfigMaps of the
// namespace (RBAC cannot name an object not made yet).
type ConfigMap struct {
	Namespace, Name string

	config func() (*rest.Config, error)
	once   sync.Once
	client kubernetes.Interface
	err    error
}

// New is the record in the ConfigMap namespace/name, through a client made
// at its first use from config.
func New(config func() (*rest.Config, error), namespace, name string) *ConfigMap {
	return &ConfigMap{Namespace: namespace, Name: name, config: config}
}

// ForClient is the record in the ConfigMap namespace/name, through c.
func ForClient(c kubernetes.Interface, namespace, name string) *ConfigMap {
	m := &ConfigMap{Namespace: namespace, Name: name, client: c}
	m.once.Do(func() {})
	return m
}

func (m *ConfigMap) String() string { return "ConfigMap " + m.Namespace + "/" + m.Name }

func (m *ConfigMap) configMaps() (corev1client.ConfigMapInterface, error) {
	m.once.Do(func() {
		var cfg *rest.Config
		if cfg, m.err = m.config(); m.err == nil {
			m.client, m.err = kubernetes.NewForConfig(cfg)
		}
	})
	if m.err != nil {
		return nil, m.err
	}
	return m.client.CoreV1().ConfigMaps(m.Namespace), nil
}

// Load answers the record, nil when the ConfigMap or its key is not there.
func (m *ConfigMap) Load(ctx context.Context) ([]byte, error) {
	cms, err := m.configMaps()
	if err != nil {
		return nil, err
	}
	cm, err := cms.Get(ctx, m.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if v, ok := cm.Data[Key]; ok {
		return []byte(v), nil
	}
	return nil, nil
}

// Update writes what update makes of the record there now, creating the
// ConfigMap when it is not there; another writer's change meanwhile (a
// conflict, a create that lost) makes it read and update again.
func (m *ConfigMap) Update(ctx context.Context, update func(old []byte) ([]byte, error)) error {
	cms, err := m.configMaps()
	if err != nil {
		return err
	}
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err = retry.OnError(retry.DefaultBackoff, raced, func() error {
		cm, err := cms.Get(ctx, m.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data, err := update(nil)
			if err != nil {
				return err
			}
			cm = &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "cueop"}},
				Data:       map[string]string{Key: string(data)},
			}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		old, had := cm.Data[Key]
		data, err := update([]byte(old))
		if err != nil || (had && string(data) == old) {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[Key] = string(data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if raced(err) {
		return fmt.Errorf("other writers kept changing it: %w", err)
	}
	return err
}
