package diff_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/identity"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestDiffIdentityLabel: an operator whose kinds act as their own
// ServiceAccounts (cueop run's default) labels every child with the
// identity (wellknown.LabelIdentity). On the CRs it converged, cueop diff
// given the identities the operator was given renders the children with
// that label and finds nothing to change (exit 0, no UPDATE); with
// --shared-identity it would take the label off every child.
func TestDiffIdentityLabel(t *testing.T) {
	ns := clustertest.Namespace(t)
	ids := &identity.Config{Namespace: ns}
	sa := identity.DefaultName("redisclusters.cache.example.com")
	// The kind's ServiceAccount, with every right: what it may do is not
	// what this test is about.
	clustertest.MustKubectl(t, "", "-n", ns, "create", "serviceaccount", sa)
	binding := ns + "-" + sa
	clustertest.MustKubectl(t, "", "create", "clusterrolebinding", binding, "--clusterrole=cluster-admin", "--serviceaccount="+ns+":"+sa)
	t.Cleanup(func() { clustertest.Kubectl(t, "", "delete", "clusterrolebinding", binding, "--ignore-not-found") })

	opts := operatortest.Options(copyTemplates(t), ns)
	opts.Identities = ids
	a, stop := operatortest.StartObserved(t, clustertest.Config(), opts)
	waitCRD(t)
	c := newClient(t, clustertest.Config())
	for i := range 2 {
		if err := c.Create(context.Background(), redisCR(ns, fmt.Sprintf("r%d", i), int64(1+i))); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, c, ns, 2)
	a.Settled(t, 0, time.Minute)
	stop()
	pods := clustertest.MustKubectl(t, "", "-n", ns, "get", "pods", "-l", wellknown.LabelIdentity, "-o", "name")
	if n := len(strings.Fields(pods)); n != 3 {
		t.Fatalf("want the 3 Pods labelled with their identity (%s), got %d:\n%s", wellknown.LabelIdentity, n, pods)
	}

	t.Run("Run", func(t *testing.T) {
		o := diff.Options{Namespace: ns, ChildLabels: func(k *template.Kind) map[string]string { return operator.ChildLabels(ids, k) }}
		r := run(t, copyTemplates(t), o)
		if s := redis(t, r); s.CRs != 2 || s.Unchanged != 2 || s.Children[diff.Update] != 0 || r.ExitCode() != 0 {
			t.Errorf("with the operator's identities: want 2 CRs unchanged, exit 0; got exit %d:\n%s", r.ExitCode(), text(t, r))
		}
		r = run(t, copyTemplates(t), diff.Options{Namespace: ns})
		if s := redis(t, r); s.Changing != 2 || s.Children[diff.Update] == 0 || r.ExitCode() != 1 {
			t.Errorf("without the identity label: want every CR's children updated (the label taken off), exit 1; got exit %d:\n%s", r.ExitCode(), text(t, r))
		}
	})
	t.Run("command", func(t *testing.T) {
		bin := cueop(t)
		out, code := outputAndCode(t, diffCommand(t, bin, copyTemplates(t), ns, "--identity-namespace", ns))
		if code != 0 || !strings.Contains(out, "RedisCluster.cache.example.com  2    2          0         0       0       0       0 ") {
			t.Errorf("cueop diff --identity-namespace %s on a converged fleet: exit %d, want 0, nothing updated:\n%s", ns, code, out)
		}
		// The Deployment's variable, as cueop run takes it.
		cmd := diffCommand(t, bin, copyTemplates(t), ns)
		cmd.Env = append(cmd.Environ(), "CUEOP_IDENTITY_NAMESPACE="+ns)
		if out, code := outputAndCode(t, cmd); code != 0 {
			t.Errorf("cueop diff with CUEOP_IDENTITY_NAMESPACE=%s: exit %d, want 0:\n%s", ns, code, out)
		}
		out, code = outputAndCode(t, diffCommand(t, bin, copyTemplates(t), ns, "--identity-namespace", ns, "--shared-identity"))
		if code != 1 || !strings.Contains(out, "-    cueop.dev/identity: ") {
			t.Errorf("cueop diff --shared-identity: exit %d, want 1 and the label taken off:\n%s", code, out)
		}
	})
}
