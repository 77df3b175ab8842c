package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/template"
)

// Rights travel with the template and are the API server's to grant. A
// kind acting as its own ServiceAccount (Options.Identities) serves a new
// revision only once the API server grants that ServiceAccount, in every
// namespace the kind is bound in, what the revision's template can do:
// the rules `cueop manifests` writes for it (identity.Kind.Rules), of the
// children and references read from its template (identity.Derive). It is
// asked, not assumed: a SelfSubjectRulesReview per namespace (and a
// SelfSubjectAccessReview per verb and resource where its answer is
// incomplete, or across namespaces), made as the ServiceAccount. A
// revision that needs more is refused, naming each rule missing and the
// role that grants it; the revision before keeps serving, and an edit (or
// a template whose rights the administrator then grants, at its next
// edit) serves. A template never grants itself a right.

// reviewError is a SelfSubjectAccessReview the API server did not answer
// (a timeout, an unavailable server, the operator stopping): not a
// verdict on the revision, which is asked again (unserved.go). A review
// the API server forbids (the operator may not impersonate the
// ServiceAccount) is a refusal, as it does not pass by itself.
type reviewError struct{ error }

func (e reviewError) Unwrap() error { return e.error }

// maxMissing bounds the rules a refusal names.
const maxMissing = 20

// rightsError is a revision whose identity lacks rights it needs.
type rightsError struct {
	sa, role string
	missing  []string
}

func (e rightsError) Error() string {
	return fmt.Sprintf("its ServiceAccount %s is not granted what the template can do: %s; grant it in the ClusterRole %s (`cueop manifests` writes it, in config/rbac/kinds.yaml) and its bindings",
		e.sa, strings.Join(e.missing, ", "), e.role)
}

// lacking is a rightsError when the API server does not grant k's
// identity a rule of need; nil when it does, or when k acts as the
// operator itself.
func (ids *identities) lacking(ctx context.Context, k *template.Kind, need identity.Kind) error {
	if ids.config == nil {
		return nil
	}
	gk := k.Resource.GroupVersionKind().GroupKind()
	sa := ids.config.For(gk, k.Resource.CRDName())
	cfg := rest.CopyConfig(ids.restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sa.Username()}
	cs, err := authorizationclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	namespaces := ids.config.BoundNamespaces(gk)
	if namespaces == nil {
		namespaces = []string{ids.namespace} // "": every namespace
	}
	var missing []string
	for _, ns := range namespaces {
		m, err := denied(ctx, cs, ns, withoutFinalizers(need.NamespacedRules()))
		if err != nil {
			return err
		}
		missing = append(missing, m...)
	}
	m, err := denied(ctx, cs, "", need.ClusterRules())
	if err != nil || len(m) == 0 && len(missing) == 0 {
		return err
	}
	missing = append(missing, m...)
	if len(missing) > maxMissing {
		missing = append(missing[:maxMissing], fmt.Sprintf("and %d more", len(missing)-maxMissing))
	}
	return rightsError{sa: sa.String(), role: identity.DefaultName(k.Resource.CRDName()), missing: missing}
}

// denied are the verbs of rules on their resources that the API server
// does not allow the caller in namespace ns ("" for every namespace, or a
// cluster-scoped resource), each as "verb resource.group in ns".
// In a namespace, one SelfSubjectRulesReview answers most of them: a
// verb its rules cover is allowed, one they do not is denied when the
// answer is complete; only the rest are asked one by one, so that a kind
// bound in many namespaces costs a request or so per namespace, not one
// per namespace, resource and verb.
func denied(ctx context.Context, cs authorizationclient.AuthorizationV1Interface, ns string, rules []rbacv1.PolicyRule) ([]string, error) {
	granted, complete, err := grantedIn(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rules {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					if covers(granted, verb, group, res) {
						continue
					}
					if complete {
						out = append(out, describeRule(verb, group, res, ns))
						continue
					}
					review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
						ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: res}}}
					got, err := cs.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
					if err != nil {
						err = fmt.Errorf("SelfSubjectAccessReview %s %s: %w", verb, res, err)
						if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
							err = reviewError{err}
						}
						return nil, err
					}
					if !got.Status.Allowed {
						out = append(out, describeRule(verb, group, res, ns))
					}
				}
			}
		}
	}
	return out, nil
}

// grantedIn are the rules the caller holds in namespace ns (a
// SelfSubjectRulesReview), and whether the API server says they are all
// it holds; none, incomplete, for "" (the review needs a namespace).
func grantedIn(ctx context.Context, cs authorizationclient.AuthorizationV1Interface, ns string) ([]authorizationv1.ResourceRule, bool, error) {
	if ns == "" {
		return nil, false, nil
	}
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}
	got, err := cs.SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		err = fmt.Errorf("SelfSubjectRulesReview in namespace %s: %w", ns, err)
		if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
			err = reviewError{err}
		}
		return nil, false, err
	}
	return got.Status.ResourceRules, !got.Status.Incomplete, nil
}

// covers tells whether one of rules allows verb on every object of
// resource res of group.
func covers(rules []authorizationv1.ResourceRule, verb, group, res string) bool {
	for _, r := range rules {
		if len(r.ResourceNames) == 0 && matches(r.Verbs, verb) && matches(r.APIGroups, group) && matches(r.Resources, res) {
			return true
		}
	}
	return false
}

func matches(set []string, s string) bool {
	return slices.Contains(set, s) || slices.Contains(set, "*")
}

// describeRule is "verb resource.group in namespace ns".
func describeRule(verb, group, res, ns string) string {
	if group != "" {
		res += "." + group
	}
	switch ns {
	case "":
		return verb + " " + res
	default:
		return verb + " " + res + " in namespace " + ns
	}
}

// withoutFinalizers is rules without those on finalizers subresources:
// the right to update a CR's finalizers is needed only where the API
// server enforces owner references' blockOwnerDeletion
// (OwnerReferencesPermissionEnforcement), which the API server does not
// tell; `cueop manifests` grants it, the check does not require it.
func withoutFinalizers(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	for _, r := range rules {
		if !slices.ContainsFunc(r.Resources, func(res string) bool { return strings.HasSuffix(res, "/finalizers") }) {
			out = append(out, r)
		}
	}
	return out
}
