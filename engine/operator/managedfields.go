package operator

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/schemaguard"
)

// moveFieldsBeforeDrop readies live, the CRD the cluster serves, for
// next, which stops serving some of its versions: once no CR is stored at
// them (status.storedVersions lists the storage version alone; before,
// the guard refuses the drop and the storage migration moves the entries
// with the CRs), every stored CR's managedFields entries at other versions
// are moved to the storage version (migrate.Migrator.MoveFields), so that
// no write of a CR fails once they are not served. The guard then counts
// what is left from the API server and refuses the revision while any
// is; a failure here is told in an Event on the CRD and left to it.
func (m *migrations) moveFieldsBeforeDrop(ctx context.Context, next *apiextensionsv1.CustomResourceDefinition, live *unstructured.Unstructured) {
	if live == nil {
		return
	}
	old := &apiextensionsv1.CustomResourceDefinition{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, old) != nil {
		return // the guard reports it
	}
	dropped := schemaguard.Dropped(old, next)
	if to, from := migrate.Pending(old); len(dropped) == 0 || len(from) > 0 || to == "" {
		return
	}
	mg := m.migrator(&migrationReport{m: m, ctx: ctx})
	mg.Report = nil
	p, err := mg.MoveFields(ctx, old.Name)
	versions := strings.Join(dropped, ",")
	if err != nil {
		msg := fmt.Sprintf("managedFields of the CRs of %s not moved to %s before %s stops being served: %v", old.Name, p.To, versions, err)
		m.log.Error(err, msg, "kind", p.Kind)
		m.event(ctx, old.Name, corev1.EventTypeWarning, "ManagedFieldsMoveFailed", msg)
		return
	}
	if p.Fields > 0 {
		msg := fmt.Sprintf("managedFields of %d CRs of %s moved to %s before %s stops being served (%d listed)", p.Fields, old.Name, p.To, versions, p.Listed)
		m.log.Info(msg, "kind", p.Kind)
		m.event(ctx, old.Name, corev1.EventTypeNormal, "ManagedFieldsMoved", msg)
	}
}
