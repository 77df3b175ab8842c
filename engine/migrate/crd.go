package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cueop/cueop/engine/wellknown"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkpoint is the annotation's content: where the pass to To got.
type checkpoint struct {
	To       string `json:"to"`
	Continue string `json:"continue,omitempty"`
	Listed   int    `json:"listed"`
	Migrated int    `json:"migrated"`
	// Fields are the CRs whose managedFields the pages passed moved.
	Fields int `json:"fields,omitempty"`
	Pages  int `json:"pages"`
	// Refused are the CRs of the pages passed whose rewrite the API
	// server refused: a pass resumed after them must not finish.
	Refused int `json:"refused,omitempty"`
}

// checkpointOf is the checkpoint of p before the page cont.
func checkpointOf(p *Progress, cont string) checkpoint {
	return checkpoint{To: p.To, Continue: cont, Listed: p.Listed, Migrated: p.Migrated, Fields: p.Fields, Pages: p.Pages, Refused: p.Refused}
}

func (m *Migrator) crd(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.Reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", name, err)
	}
	return crd, nil
}

// resume fills p from crd's checkpoint of a pass to p.To and returns the
// page to go on from; "" (the first page) when there is none.
func resume(crd *apiextensionsv1.CustomResourceDefinition, p *Progress) string {
	var cp checkpoint
	if json.Unmarshal([]byte(crd.Annotations[wellknown.AnnotationStorageMigration]), &cp) != nil || cp.To != p.To || cp.Continue == "" {
		return ""
	}
	p.Listed, p.Migrated, p.Fields, p.Pages, p.Refused, p.Resumed = cp.Listed, cp.Migrated, cp.Fields, cp.Pages, cp.Refused, true
	return cp.Continue
}

// save keeps the checkpoint in the CRD's annotation; none once the pass is
// over (cont "").
func (m *Migrator) save(ctx context.Context, name string, p *Progress, cont string) error {
	var value any
	if cont != "" {
		b, err := json.Marshal(checkpointOf(p, cont))
		if err != nil {
			return err
		}
		value = string(b)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{wellknown.AnnotationStorageMigration: value}}})
	if err != nil {
		return err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	obj.SetName(name)
	if err := m.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: checkpoint: %w", name, err)
	}
	return nil
}

// setCondition sets the CRD's StorageMigrating condition from p.
func (m *Migrator) setCondition(ctx context.Context, name string, p *Progress) error {
	return m.updateStatus(ctx, name, func(crd *apiextensionsv1.CustomResourceDefinition) error {
		setCondition(crd, p)
		return nil
	})
}

// finish sets status.storedVersions to [p.To], if p.To is still the
// storage version, and the condition to done.
func (m *Migrator) finish(ctx context.Context, name string, p *Progress) error {
	return m.updateStatus(ctx, name, func(crd *apiextensionsv1.CustomResourceDefinition) error {
		if to, _ := Pending(crd); to != p.To {
			return fmt.Errorf("CustomResourceDefinition %s: the storage version changed from %s to %s during the migration", name, p.To, to)
		}
		crd.Status.StoredVersions = []string{p.To}
		p.Done = true
		setCondition(crd, p)
		return nil
	})
}

func setCondition(crd *apiextensionsv1.CustomResourceDefinition, p *Progress) {
	c := apiextensionsv1.CustomResourceDefinitionCondition{Type: wellknown.CRDConditionStorageMigrating, Status: apiextensionsv1.ConditionTrue,
		Reason: wellknown.CRDReasonStorageMigrationRunning, Message: "storage migration " + p.String()}
	if p.Done {
		c.Status, c.Reason = apiextensionsv1.ConditionFalse, wellknown.CRDReasonStorageMigrationSucceeded
	}
	apihelpers.SetCRDCondition(crd, c)
}

// updateStatus reads the CRD, changes it with change and writes its status,
// again on a conflict.
func (m *Migrator) updateStatus(ctx context.Context, name string, change func(*apiextensionsv1.CustomResourceDefinition) error) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := m.crd(ctx, name)
		if err != nil {
			return err
		}
		if err := change(crd); err != nil {
			return err
		}
		return m.Client.Status().Update(ctx, crd, client.FieldOwner(FieldManager))
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s: status: %w", name, err)
	}
	return nil
}
