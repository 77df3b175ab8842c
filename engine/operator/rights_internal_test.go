package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// TestRightsReviewUnanswered: a SelfSubjectRulesReview (in a namespace)
// or SelfSubjectAccessReview (across namespaces) the API server does not
// answer (unavailable) is not a verdict on the revision, which is asked
// again (reviewError, retried); one it forbids (the operator may not
// impersonate the ServiceAccount) is a refusal.
func TestRightsReviewUnanswered(t *testing.T) {
	for _, c := range []struct {
		status    int
		retriable bool
		ns, names string
	}{
		{http.StatusServiceUnavailable, true, "ns", "SelfSubjectRulesReview in namespace ns"},
		{http.StatusForbidden, false, "ns", "SelfSubjectRulesReview in namespace ns"},
		{http.StatusServiceUnavailable, true, "", "SelfSubjectAccessReview get configmaps"},
		{http.StatusForbidden, false, "", "SelfSubjectAccessReview get configmaps"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.status)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d,"reason":%q}`, c.status, metav1.StatusReason(http.StatusText(c.status)))
		}))
		cs, err := authorizationclient.NewForConfig(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
		_, err = denied(context.Background(), cs, c.ns, rules)
		srv.Close()
		if err == nil {
			t.Fatalf("status %d: no error", c.status)
		}
		if got := errors.As(err, new(reviewError)); got != c.retriable {
			t.Errorf("status %d: %v: asked again = %v, want %v", c.status, err, got, c.retriable)
		}
		if !strings.Contains(err.Error(), c.names) {
			t.Errorf("status %d: %v does not name the review", c.status, err)
		}
	}
}
