package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster"
)

// devIdentityManager is the field manager of the kinds' ServiceAccounts,
// roles and bindings `cueop dev` applies.
const devIdentityManager = "cueop-dev-identities"

// devRoleSettle bounds the wait, after a role changed, for the API
// server's authorizer to grant what it now holds.
const devRoleSettle = 10 * time.Second

// devIdentities makes `cueop dev` act as production does: each kind as
// its own ServiceAccount, with the roles `cueop manifests` generates from
// the templates, golden cases and samples (kindRights), applied with the
// cluster admin's config at start and again on each template load, so
// that a child kind a template, sample or golden case adds is granted,
// and one none of them tells (a kind computed from the CR) is refused
// (Forbidden) as it would be in a cluster.
type devIdentities struct {
	g                 *globals
	flags             identityFlags
	testdata, samples string
	cfg               *identity.Config
	applier           *apply.Applier
	cs                kubernetes.Interface
	out               io.Writer
	log               logr.Logger

	mu      sync.Mutex // one sync at a time (the sharded replicas load each)
	printed string     // the last line naming the kinds' ServiceAccounts
	// rights are what each kind was granted so far, by kind: a load only
	// adds to them. The load is told before its kinds serve, and one may
	// be refused (a breaking schema change) and keep its last revision
	// serving, which must keep the rights it had.
	rights map[schema.GroupKind]identity.Kind
	// good is the last revision of each kind a load compiled, by package:
	// a package that breaks later keeps it serving, so it keeps its
	// identity, its rights and its place in the printed line.
	good map[string]*template.Kind
	// warned are the warnings of the rights printed so far.
	warned map[string]bool
}

// newDevIdentities is nil with --shared-identity; else it creates the
// identity namespace, applies the identities of set's kinds and prints
// which ServiceAccount each kind acts as.
func newDevIdentities(ctx context.Context, out io.Writer, g *globals, f *devFlags, cluster *localcluster.Cluster, set *template.Set) (*devIdentities, error) {
	cfg, err := f.identity.config()
	if err != nil || cfg == nil {
		if err == nil {
			fmt.Fprintln(out, "every kind acts as the operator itself (--shared-identity)")
		}
		return nil, err
	}
	c, err := client.New(cluster.Config, client.Options{})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		return nil, err
	}
	d := &devIdentities{g: g, flags: f.identity, testdata: f.testdata, samples: f.samples, cfg: cfg, cs: cs, out: out, log: f.log,
		applier: &apply.Applier{Client: c, FieldManager: devIdentityManager}}
	if err := ensureNamespace(ctx, cs, cfg.Namespace); err != nil {
		return nil, fmt.Errorf("identity namespace %s: %w", cfg.Namespace, err)
	}
	// dev owns the cluster: the namespaces a kind is bound in exist before
	// its RoleBindings are applied there (a sample Namespace, applied
	// later, only sets its labels).
	for _, gk := range slices.SortedFunc(maps.Keys(cfg.Namespaces), func(a, b schema.GroupKind) int { return strings.Compare(a.String(), b.String()) }) {
		for _, ns := range cfg.BoundNamespaces(gk) {
			if err := ensureNamespace(ctx, cs, ns); err != nil {
				return nil, fmt.Errorf("--bind-namespaces %s=%s: namespace %s: %w", gk, strings.Join(cfg.BoundNamespaces(gk), ","), ns, err)
			}
		}
	}
	if err := d.sync(ctx, set); err != nil {
		return nil, err
	}
	return d, nil
}

// ensureNamespace creates the namespace name when it is missing.
func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// config is operator.Options.Identities: nil (the shared identity) when d
// is.
func (d *devIdentities) config() *identity.Config {
	if d == nil {
		return nil
	}
	return d.cfg
}

// hook is operator.Options.TemplatesLoaded: nil when d is.
func (d *devIdentities) hook() func(context.Context, *template.Set) {
	if d == nil {
		return nil
	}
	return d.loaded
}

// loaded is operator.Options.TemplatesLoaded: the roles follow the
// templates. A failure is logged; the kinds act with the roles they had.
func (d *devIdentities) loaded(ctx context.Context, set *template.Set) {
	if err := d.sync(ctx, set); err != nil && ctx.Err() == nil {
		d.log.Error(err, "the kinds' roles were not updated")
	}
}

// sync applies the identities of set's kinds, sending nothing for an
// object that would not change, and waits for the authorizer to grant
// the rules of the roles it changed.
func (d *devIdentities) sync(ctx context.Context, set *template.Set) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	opts, err := d.g.renderOptions()
	if err != nil {
		return err
	}
	set, broken := d.served(set)
	kinds := d.grow(d.rightsOf(set, opts))
	ids, err := identities(kinds, d.flags)
	if err != nil {
		return err
	}
	changed := map[string]bool{} // ClusterRoles, by name
	for _, o := range identity.Objects(ids, operatorServiceAccount) {
		if o.GetName() == identity.ImpersonateName {
			continue // dev acts as the cluster admin, who may impersonate anyone
		}
		action, err := d.apply(ctx, o)
		if err != nil {
			return err
		}
		if _, ok := o.(*rbacv1.ClusterRole); ok && action != apply.Unchanged {
			changed[o.GetName()] = true
		}
	}
	var settle []identity.Identity
	for _, id := range ids {
		if changed[id.RoleName()] {
			settle = append(settle, id)
		}
	}
	if err := d.settle(ctx, settle); err != nil {
		d.log.Info("a role's rights are not granted yet", "error", err.Error())
	}
	d.print(set, ids, kinds, broken)
	return nil
}

// rightsOf are the rights of set's kinds (kindRights). A case that does
// not render, or a kind a template declares that the allow-lists refuse,
// adds no right: the CR's own status says why it does not render. Where a
// template does not tell a kind is printed, once.
func (d *devIdentities) rightsOf(set *template.Set, opts render.Options) []identity.Kind {
	r, err := kindRights(set, d.testdata, d.samples, opts) // manifests_kinds.go
	if err := errors.Join(r.refused, err); err != nil {
		d.log.Info("rights computed without the cases that did not render and the kinds the allow-lists refuse", "error", err.Error())
	}
	if d.warned == nil {
		d.warned = map[string]bool{}
	}
	for _, w := range r.warnings {
		if !d.warned[w] {
			d.warned[w] = true
			fmt.Fprintln(d.out, "warn", w)
		}
	}
	return r.kinds
}

// served is set as the operator serves it: its kinds, and of each package
// broken in set, the last revision that compiled, which keeps serving;
// broken are the packages of those. A package neither in set nor broken
// is gone, and forgotten.
func (d *devIdentities) served(set *template.Set) (*template.Set, map[string]bool) {
	if d.good == nil {
		d.good = map[string]*template.Kind{}
	}
	for name := range d.good {
		if set.Broken[name] == nil {
			delete(d.good, name)
		}
	}
	out := &template.Set{Root: set.Root, Kinds: slices.Clone(set.Kinds), Broken: set.Broken}
	broken := map[string]bool{}
	for name, k := range d.good {
		out.Kinds, broken[name] = append(out.Kinds, k), true
	}
	for _, k := range set.Kinds {
		d.good[k.Name] = k
	}
	slices.SortFunc(out.Kinds, func(a, b *template.Kind) int { return strings.Compare(a.Name, b.Name) })
	return out, broken
}

// grow adds kinds' rights to those granted so far, and returns kinds with
// them.
func (d *devIdentities) grow(kinds []identity.Kind) []identity.Kind {
	if d.rights == nil {
		d.rights = map[schema.GroupKind]identity.Kind{}
	}
	out := make([]identity.Kind, len(kinds))
	for i, k := range kinds {
		if had, ok := d.rights[k.GroupKind]; ok {
			maps.Copy(k.Children, had.Children)
			maps.Copy(k.References, had.References)
		}
		d.rights[k.GroupKind], out[i] = k, k
	}
	return out
}

// apply applies o unless the live object already holds it.
func (d *devIdentities) apply(ctx context.Context, o client.Object) (apply.Action, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return "", err
	}
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	desired := &unstructured.Unstructured{Object: m}
	live, err := d.applier.Get(ctx, desired)
	if err != nil {
		return "", err
	}
	if live != nil {
		return d.applier.Apply(ctx, desired, live)
	}
	if action, err := d.applier.Apply(ctx, desired, nil); !apply.IsExists(err) {
		return action, err
	}
	// Made meanwhile (another replica's load): apply over it.
	if live, err = d.applier.Get(ctx, desired); err != nil {
		return "", err
	}
	return d.applier.Apply(ctx, desired, live)
}

// settle waits until the API server's authorizer grants each of ids every
// verb of its rules (its RBAC informer lags the write), so that the
// reconciles of the load that follows are not refused by a stale role.
func (d *devIdentities) settle(ctx context.Context, ids []identity.Identity) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, devRoleSettle)
	defer cancel()
	for _, id := range ids {
		ns := ""
		if len(id.Namespaces) > 0 {
			ns = id.Namespaces[0]
		}
		for _, r := range id.Kind.Rules() {
			for _, group := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, verb := range r.Verbs {
						attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Subresource: sub, Verb: verb}
						if err := d.granted(ctx, id.ServiceAccount, attrs); err != nil {
							return fmt.Errorf("%s: %s %s: %w", id.ServiceAccount, verb, resourceText(attrs), err)
						}
					}
				}
			}
		}
	}
	return nil
}

// granted waits until sa may do attrs.
func (d *devIdentities) granted(ctx context.Context, sa identity.ServiceAccount, attrs *authorizationv1.ResourceAttributes) error {
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa.Username(), Groups: groups, ResourceAttributes: attrs}}
		res, err := d.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if res.Status.Allowed {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func resourceText(a *authorizationv1.ResourceAttributes) string {
	s := a.Resource
	if a.Group != "" {
		s += "." + a.Group
	}
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	return s
}

// print prints, when it differs from the last one, one line naming the
// ServiceAccount each kind of set acts as, a kind by Kind.group when
// another has the same Kind.
// A kind whose template tells no child's nor reference's kind, and none
// of whose samples and golden cases renders one, has a role with no right
// on children: the line says so, or its first CR would read Forbidden
// with no hint why. A kind of a broken package (in broken) is served at
// its last good revision: the line says so too.
func (d *devIdentities) print(set *template.Set, ids []identity.Identity, kinds []identity.Kind, broken map[string]bool) {
	gks := make([]schema.GroupKind, len(kinds))
	for i, k := range kinds {
		gks[i] = k.GroupKind
	}
	parts := make([]string, 0, len(ids))
	for i, id := range ids {
		part := kindName(gks[i], gks) + " as " + id.ServiceAccount.String()
		if broken[set.Kinds[i].Name] {
			part += " (template broken: its last good revision serves)"
		}
		if id.Namespaces != nil {
			part += " (in " + strings.Join(id.Namespaces, ",") + ")"
		}
		if len(kinds[i].Children) == 0 && len(kinds[i].References) == 0 {
			part += " (neither its template nor a sample or golden case tells a child's kind: no rights on children; see the warnings, --samples, --testdata)"
		}
		parts = append(parts, part)
	}
	slices.Sort(parts)
	line := "kinds act as their own ServiceAccounts, with the roles their templates, samples and golden cases need: " + strings.Join(parts, ", ")
	if len(parts) == 0 || line == d.printed {
		return
	}
	d.printed = line
	fmt.Fprintln(d.out, line)
}
