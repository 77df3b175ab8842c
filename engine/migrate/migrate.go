package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// FieldManager is the field manager of the migration's writes.
	FieldManager = "cueop-storage-migration"
	// DefaultPageSize is the number of CRs listed at once.
	DefaultPageSize = 500
	// maxConflicts bounds the rewrites of one CR that keeps changing.
	maxConflicts = 10
)

// Progress is how far the migration of one CRD got.
type Progress struct {
	// CRD is the CRD's name, Kind its kind.
	CRD, Kind string
	// From are the stored versions other than To, the storage version.
	From []string
	To   string
	// Listed are the CRs listed so far, Migrated those of them the API
	// server stored anew (their resourceVersion moved), Pages the pages
	// listed.
	Listed, Migrated, Pages int
	// Fields counts the CRs whose managedFields entries at other versions
	// were moved to To (moveFields): a version no entry is at may stop
	// being served.
	Fields int
	// Refused counts the CRs whose rewrite the API server refused (an
	// admission policy, a validation rule the stored object breaks): the
	// pass goes on past them, and does not finish while there are any.
	// RefusedBy names the first few, with the API server's reason.
	Refused   int
	RefusedBy []string
	// Refusals are the CRs refused: every one when the pass was not
	// resumed (a retry of the pass rewrites only them, Migrator.Retry).
	Refusals []types.NamespacedName
	// Resumed tells that the pass resumed from a checkpoint.
	Resumed bool
	// Done tells that status.storedVersions is [To].
	Done bool
}

func (p Progress) String() string {
	s := fmt.Sprintf("%s -> %s: no CR to rewrite", strings.Join(p.From, ","), p.To)
	if p.Listed == 0 && p.Pages == 0 && !p.Done {
		// Nothing listed yet: the pass starts (or retries the CRs
		// refused before), the count unknown.
		s = fmt.Sprintf("%s -> %s: rewriting the stored CRs", strings.Join(p.From, ","), p.To)
	}
	if p.Listed > 0 {
		pages := "pages"
		if p.Pages == 1 {
			pages = "page"
		}
		s = fmt.Sprintf("%s -> %s: %d CRs rewritten of %d listed (%d %s)", strings.Join(p.From, ","), p.To, p.Migrated, p.Listed, p.Pages, pages)
	}
	if p.Fields > 0 {
		s += fmt.Sprintf("; managedFields of %d moved to %s", p.Fields, p.To)
	}
	if p.Refused > 0 {
		s += fmt.Sprintf("; %d refused", p.Refused)
	}
	if p.Done {
		s += "; status.storedVersions is [" + p.To + "]"
	}
	return s
}

// transient tells an error a retry may not meet (no answer, a timeout, an
// overloaded API server) from a refusal of the CR's rewrite itself (an
// admission policy, validation, a conversion that fails: an internal error
// names the CR's own conversion).
func transient(err error) bool {
	if !errors.As(err, new(apierrors.APIStatus)) {
		return true // no answer from the API server at all
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err)
}

// maxRefusedNamed bounds Progress.RefusedBy.
const maxRefusedNamed = 5

// refused counts obj's rewrite refused with err.
func (p *Progress) refused(obj client.Object, err error) {
	p.Refused++
	p.Refusals = append(p.Refusals, client.ObjectKeyFromObject(obj))
	if len(p.RefusedBy) < maxRefusedNamed {
		p.RefusedBy = append(p.RefusedBy, fmt.Sprintf("%s/%s: %v", obj.GetNamespace(), obj.GetName(), err))
	}
}

// RefusedError is the error of a pass that could not rewrite every CR:
// status.storedVersions is left as it is, and the pass is tried again.
type RefusedError struct{ Progress Progress }

func (e *RefusedError) Error() string {
	p := e.Progress
	more := ""
	if n := p.Refused - len(p.RefusedBy); n > 0 {
		more = fmt.Sprintf("; and %d more", n)
	}
	if len(p.From) == 0 {
		return fmt.Sprintf("%s: %d CRs could not have their managedFields moved to %s: %s%s",
			p.CRD, p.Refused, p.To, strings.Join(p.RefusedBy, "; "), more)
	}
	return fmt.Sprintf("%s: %d CRs could not be rewritten at %s, so status.storedVersions keeps %s: %s%s",
		p.CRD, p.Refused, p.To, strings.Join(p.From, ","), strings.Join(p.RefusedBy, "; "), more)
}

// Pending returns crd's storage version and the other versions its
// status.storedVersions lists, nil when there is nothing to migrate.
func Pending(crd *apiextensionsv1.CustomResourceDefinition) (to string, from []string) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			to = v.Name
		}
	}
	for _, v := range crd.Status.StoredVersions {
		if v != to && !slices.Contains(from, v) {
			from = append(from, v)
		}
	}
	return to, from
}

// Migrator migrates the stored CRs of a CRD.
type Migrator struct {
	// Reader reads from the API server (not a cache), Client writes.
	Reader client.Reader
	Client client.Client
	// Discovery, when set, is asked until the API server stores at the new
	// storage version (its storageVersionHash) before the first rewrite.
	Discovery discovery.DiscoveryInterface
	// Config, when set, is the API server's: discovery is then read over a
	// new connection each time (storage.go), for several API servers
	// behind one address.
	Config *rest.Config
	// PageSize is the number of CRs listed at once; DefaultPageSize when 0.
	PageSize int64
	// Limiter, when set, paces the rewrites (under the client's own limit,
	// so that reconciles keep their share of it).
	Limiter flowcontrol.RateLimiter
	// Report, when set, is told the progress at the start, after each page
	// and at the end.
	Report func(Progress)
	// Retry, when set, is the progress of the attempt before, which failed
	// with a RefusedError: when its pass ran whole (not resumed) to the
	// same storage version and no pass is under way, only the CRs it
	// refused are rewritten, as every other CR was stored at the storage
	// version by it or by a write since.
	Retry *Progress
}

// Run migrates the CRD named name: each CR rewritten at the storage
// version, then status.storedVersions set to it alone. A CRD with nothing
// to migrate costs one read.
func (m *Migrator) Run(ctx context.Context, name string) (Progress, error) {
	crd, err := m.crd(ctx, name)
	if err != nil {
		return Progress{CRD: name}, err
	}
	to, from := Pending(crd)
	p := Progress{CRD: name, Kind: crd.Spec.Names.Kind, From: from, To: to}
	if len(from) == 0 {
		p.Done = true
		return p, nil
	}
	if !hasStatus(crd, to) {
		return p, fmt.Errorf("%s: version %s has no status subresource, which the migration rewrites CRs through", name, to)
	}
	if err := m.waitStorage(ctx, crd, to); err != nil {
		return p, err
	}
	cont := resume(crd, &p)
	if err := m.setCondition(ctx, name, &p); err != nil {
		return p, err
	}
	m.report(p)
	if err := m.passOrRetry(ctx, crd, &p, cont); err != nil {
		return p, err
	}
	if p.Refused > 0 {
		return p, &RefusedError{Progress: p}
	}
	if err := m.finish(ctx, name, &p); err != nil {
		return p, err
	}
	m.report(p)
	return p, nil
}

// pass rewrites every CR of crd's kind from the page cont on, and moves
// the managedFields entries at other versions of those that have some,
// saving a checkpoint after each page when checkpointed. A continue token
// that expired starts again from the first page; one the API server
// refuses (a checkpoint written by hand, of another resource) too, its
// counts dropped.
func (m *Migrator) pass(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, p *Progress, cont string, checkpointed bool) error {
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: p.To, Kind: crd.Spec.Names.Kind}
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(crd.Spec.Names.ListKind))
		err := m.Reader.List(ctx, list, client.Limit(m.pageSize()), client.Continue(cont))
		if apierrors.IsResourceExpired(err) && cont != "" {
			cont, p.Listed, p.Refused, p.RefusedBy, p.Refusals = "", 0, 0, nil, nil
			continue
		}
		if apierrors.IsBadRequest(err) && cont != "" {
			cont, p.Listed, p.Migrated, p.Fields, p.Pages, p.Refused, p.RefusedBy, p.Refusals = "", 0, 0, 0, 0, 0, nil, nil
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: list at %s: %w", crd.Name, p.To, err)
		}
		for i := range list.Items {
			if err := m.rewriteCounted(ctx, gvk, &list.Items[i], p); err != nil {
				return err
			}
		}
		p.Pages++
		cont = list.GetContinue()
		if !checkpointed {
			if cont == "" {
				return nil
			}
			continue
		}
		if err := m.save(ctx, crd.Name, p, cont); err != nil {
			return err
		}
		if err := m.setCondition(ctx, crd.Name, p); err != nil {
			return err
		}
		m.report(*p)
		if cont == "" {
			return nil
		}
	}
}

// rewriteCounted rewrites obj (during a migration, p.From not empty),
// moving its managedFields entries at other versions when it has some,
// and counts it in p; it fails only when ctx is done or the API server
// does not answer.
func (m *Migrator) rewriteCounted(ctx context.Context, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, p *Progress) error {
	var moved bool
	var err error
	switch {
	case StaleFields(obj.ManagedFields, gvk.GroupVersion().String()):
		moved, err = m.moveFields(ctx, gvk, obj)
		if moved {
			p.Fields++
		}
	case len(p.From) > 0:
		moved, err = m.rewrite(ctx, gvk, obj)
	}
	if err != nil && (ctx.Err() != nil || transient(err)) {
		return err // the pass stops, and is resumed from its checkpoint
	}
	if err != nil { // the others go on; the pass will not finish
		p.refused(obj, err)
	}
	if moved {
		p.Migrated++
	}
	p.Listed++
	return nil
}

// passOrRetry rewrites only the CRs the attempt before refused, when
// Retry allows it (no pass under way, cont ""), else every CR from the
// page cont on.
func (m *Migrator) passOrRetry(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, p *Progress, cont string) error {
	r := m.Retry
	if cont != "" || r == nil || r.Resumed || r.To != p.To || r.Refused != len(r.Refusals) {
		return m.pass(ctx, crd, p, cont, true)
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: p.To, Kind: crd.Spec.Names.Kind}
	for _, key := range r.Refusals {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		err := m.Reader.Get(ctx, key, obj)
		switch {
		case apierrors.IsNotFound(err): // gone: nothing stored at another version
		case err != nil && ctx.Err() != nil:
			return err
		case err != nil:
			p.refused(obj, err)
		default:
			if err := m.rewriteCounted(ctx, gvk, obj, p); err != nil {
				return err
			}
		}
	}
	if err := m.setCondition(ctx, crd.Name, p); err != nil {
		return err
	}
	m.report(*p)
	return nil
}

// rewrite sends obj's resourceVersion back as a merge patch of its status
// subresource (a write of the whole object, which needs no more than the
// operator's right to write status), so that the API server stores it at
// the storage version; it tells whether that wrote (the resourceVersion
// moved). A conflict reads obj again; a CR gone is skipped.
func (m *Migrator) rewrite(ctx context.Context, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) (bool, error) {
	for attempt := 1; ; attempt++ {
		if m.Limiter != nil {
			if err := m.Limiter.Wait(ctx); err != nil {
				return false, err
			}
		}
		obj.SetGroupVersionKind(gvk)
		rv := obj.ResourceVersion
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q}}`, rv)
		err := m.Client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(FieldManager))
		switch {
		case err == nil:
			return obj.ResourceVersion != rv, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err) && attempt < maxConflicts:
			obj.SetGroupVersionKind(gvk)
			if err := m.Reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		default:
			return false, fmt.Errorf("%s %s/%s: rewrite at %s: %w", gvk.Kind, obj.Namespace, obj.Name, gvk.Version, err)
		}
	}
}

// hasStatus tells whether version of crd has the status subresource (a
// CR's rewrite through a missing one would read as the CR gone).
func hasStatus(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return v.Subresources != nil && v.Subresources.Status != nil
		}
	}
	return false
}

func (m *Migrator) pageSize() int64 {
	if m.PageSize > 0 {
		return m.PageSize
	}
	return DefaultPageSize
}

func (m *Migrator) report(p Progress) {
	if m.Report != nil {
		m.Report(p)
	}
}
