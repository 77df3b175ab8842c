// Stage 0, admit: the kind may act in the CR's namespace (notBound), the CR
// is not stalled over its render budget (budgetStall); and the API server's
// denials at any stage, which stall the CR instead of failing it.
//
// It must not write anything nor retry a denial itself: a denied CR is
// looked at again after forbiddenRecheck.

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Forbidden is a refusal, never a deletion. When the API server's
// authorization refuses a request for a CR's children or references (an
// apply, create, patch, release or delete of a child, a list of a child
// kind or of the CR's children, a read of a referenced object), the CR
// stalls with wellknown.ReasonForbidden, naming each request refused and the user the
// API server named; what was refused is never taken for absent: a refused
// read renders nothing, and a CR whose children cannot be listed from the
// API server prunes and deletes nothing. The other children of the CR are
// applied all the same, and the CR is looked at again every
// forbiddenRecheck, so that it converges once the role is fixed.

// forbiddenRecheck is how often a Forbidden CR is reconciled again: a
// role's change brings no event, and the failure backoff (up to minutes)
// would leave a CR whose role was fixed waiting long.
const forbiddenRecheck = 15 * time.Second

// authzDenied matches the API server's authorization refusal:
// `User "<user>" cannot <verb> resource "<resource>" in API group "<group>"`.
var authzDenied = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]*)"(?: in API group "([^"]*)")?`)

// denial is a request for a CR's children or references the API server's
// authorization refused.
type denial struct {
	what string // the request: "create ConfigMap ns/name", "list Secret in namespace ns"
	line string // what, the user, the verb and the resource
	err  error
}

func (d *denial) Error() string { return d.line }
func (d *denial) Unwrap() error { return d.err }

// deny is err, when it is the API server's authorization refusing the
// request what, as a denial; any other error (nil too) as it is. A
// Forbidden that names no user (an admission plugin's, a namespace being
// terminated) is not a denial.
func deny(what string, err error) error {
	if err == nil || !apierrors.IsForbidden(err) {
		return err
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return err
	}
	m := authzDenied.FindStringSubmatch(st.Status().Message)
	if m == nil {
		return err
	}
	resource := m[3]
	if m[4] != "" {
		resource += "." + m[4]
	}
	return &denial{what: what, err: err,
		line: fmt.Sprintf("%s: forbidden for %s (verb %s, resource %s)", what, m[1], m[2], resource)}
}

// objectText is "Kind namespace/name", as denials name a child.
func objectText(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// forbidden stalls the CR with wellknown.ReasonForbidden when err holds denials, and
// returns err without them (nil when it held nothing else): a denial is
// not retried with backoff but every forbiddenRecheck (result). A view of
// the children that failed only for denials is no observe failure: the CR
// is stalled, not in progress.
func (r *run) forbidden(err error) (outcome, error) {
	lines, rest := splitDenials(err)
	if len(lines) == 0 {
		return outcome{}, err
	}
	if r.observeFailed != nil {
		if l, other := splitDenials(r.observeFailed); len(l) > 0 && other == nil {
			r.observeFailed = nil
		}
	}
	return stallOf(wellknown.ReasonForbidden, strings.Join(lines, "\n")), rest
}

// splitDenials are the lines of the denials err holds, once each in order,
// and err without them: a wrapper of nothing but denials goes with them.
func splitDenials(err error) ([]string, error) {
	var d *denial
	switch u := err.(type) {
	case nil:
		return nil, nil
	case interface{ Unwrap() []error }:
		var lines []string
		var rest []error
		for _, e := range u.Unwrap() {
			l, r := splitDenials(e)
			lines = appendNew(lines, l...)
			if r != nil {
				rest = append(rest, r)
			}
		}
		if len(lines) == 0 {
			return nil, err
		}
		return lines, errors.Join(rest...)
	case interface{ Unwrap() error }:
		if errors.As(err, &d) && d == err {
			return []string{d.line}, nil
		}
		lines, r := splitDenials(u.Unwrap())
		if r != nil {
			return lines, err
		}
		return lines, nil
	}
	return nil, err
}

func appendNew(lines []string, more ...string) []string {
	for _, l := range more {
		if !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	return lines
}

// notBound stalls cr when its kind is not bound in its namespace
// (Host.Bound).
func notBound(host Host, cr *unstructured.Unstructured) *stall {
	if host == nil {
		return nil
	}
	if err := host.Bound(cr.GetNamespace()); err != nil {
		return &stall{reason: wellknown.ReasonNamespaceNotBound, message: fmt.Sprintf("%s: %v; nothing is rendered, applied or pruned", objectText(cr), err)}
	}
	return nil
}

// forbiddenHint is the Reconciling message of a CR stalled for a reason
// of this file, "" for another reason.
func forbiddenHint(reason string) string {
	switch reason {
	case wellknown.ReasonForbidden:
		return fmt.Sprintf("the API server refused a request of the kind's identity: nothing was deleted; checked again every %s, at once on a change of spec or template", forbiddenRecheck)
	case wellknown.ReasonNamespaceNotBound:
		return "the kind's identity is not bound in this namespace: nothing is done until the administrator binds it here"
	}
	return ""
}

// refusedDeletion ends the reconcile of a CR being deleted whose children
// could not be listed or released: a denial stalls it (written in its
// status, with an Event), and it is looked at again every
// forbiddenRecheck; its finalizers stay either way.
func (r *run) refusedDeletion(ctx context.Context, err error) (ctrl.Result, error) {
	o, rest := r.forbidden(err)
	if !r.note(o) {
		return ctrl.Result{}, err
	}
	serr := r.writeStatus(ctx)
	r.events.stall(r.cr, r.stalled)
	return ctrl.Result{RequeueAfter: forbiddenRecheck}, errors.Join(rest, serr)
}

// budgetStall returns the stall of a CR whose render ran out of budget at
// its current generation with k's revision, or nil. Such a CR is not
// rendered again until its spec or the template changes: the render would
// only run out again, leaving one more evaluation running abandoned. The
// stall is read from the CR's own Stalled condition, so that it holds
// across restarts of the operator too.
func budgetStall(cr *unstructured.Unstructured, k *template.Kind) *stall {
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != wellknown.ConditionStalled || m["status"] != "True" || m["reason"] != wellknown.ReasonRenderBudget {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		msg, _ := m["message"].(string)
		if gen == cr.GetGeneration() && strings.Contains(msg, render.BudgetRevision(k)) {
			return &stall{reason: wellknown.ReasonRenderBudget, message: msg}
		}
	}
	return nil
}
