package operator_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// stormDuration is how long TestNoRetryStorm holds its stuck CRs:
// CUEOP_STORM_DURATION (make bench sets 5m), else 40s.
func stormDuration(t *testing.T) time.Duration {
	if s := os.Getenv("CUEOP_STORM_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CUEOP_STORM_DURATION: %v", err)
		}
		return d
	}
	return 40 * time.Second
}

// maxRetries bounds the retries of one CR over d under the exponential
// backoff (200ms doubling, capped at 5 minutes), with one spare.
func maxRetries(d time.Duration) int {
	n, wait, total := 0, 200*time.Millisecond, time.Duration(0)
	for total < d {
		total += wait
		wait = min(2*wait, 5*time.Minute)
		n++
	}
	return n + 1
}

// TestNoRetryStorm holds 10 CRs whose Pods never become ready and 10 whose
// applies keep failing, and counts cueop's requests meanwhile: the first
// cost nothing while they wait (they are woken by watch events, not
// polled); the second retry with exponential backoff.
func TestNoRetryStorm(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	editTemplate(t, dir, func(s string) string {
		return strings.Replace(s, `volumes: [{name: "config", configMap: name: children.config.metadata.name}]`,
			`volumes: [{name: "config", configMap: name: children.config.metadata.name}]
				if parent.metadata.labels.stuck != _|_ {nodeSelector: nowhere: "true"}
				if parent.metadata.labels.broken != _|_ {priorityClassName: "does-not-exist"}`, 1)
	})
	cfg, ct := testkit.CountRequests(clustertest.Config())
	startOperator(t, dir, ns, cfg)
	c := newClient(t)
	waitCRD(t)
	var docs []string
	for i := range 10 {
		docs = append(docs, strings.Replace(redisYAML(ns, fmt.Sprintf("stuck-%d", i), 1, "7.0"), "metadata:\n", "metadata:\n  labels: {stuck: \"yes\"}\n", 1))
		docs = append(docs, strings.Replace(redisYAML(ns, fmt.Sprintf("broken-%d", i), 1, "7.0"), "metadata:\n", "metadata:\n  labels: {broken: \"yes\"}\n", 1))
	}
	mustKubectl(t, strings.Join(docs, "---\n"), "apply", "-f", "-")
	eventually(t, time.Minute, func() string {
		for i := range 10 {
			if why := stalled(t, c, ns, fmt.Sprintf("broken-%d", i), "ApplyRejected", "does-not-exist"); why != "" {
				return why
			}
			if pods := listPods(t, c, ns, fmt.Sprintf("stuck-%d", i)); len(pods) != 1 {
				return "stuck pods not created"
			}
		}
		return ""
	})
	writes0, reads0 := testkit.Strings(ct.Writes(0)), ct.Reads()
	d := stormDuration(t)
	time.Sleep(d)
	writes1, reads1 := testkit.Strings(ct.Writes(0)), ct.Reads()
	got := len(writes1) - len(writes0) + reads1 - reads0
	// Each retry of a broken CR re-sends its one refused Pod; watch
	// requests (a handful) come on top.
	limit := 10*maxRetries(d) + 20
	t.Logf("%s with 10 never-ready and 10 always-failing CRs: %d requests (%d writes), limit %d; a retry every 3s would be %d",
		d, got, len(writes1)-len(writes0), limit, int(math.Round(d.Seconds()/3))*20)
	if got > limit {
		t.Errorf("%d requests in %s, want at most %d: %v", got, d, limit, writes1[len(writes0):])
	}
	for i := range 10 {
		if ready := conditionStatus(getCR(t, c, ns, fmt.Sprintf("stuck-%d", i)), "Ready"); ready != "False" {
			t.Errorf("stuck-%d Ready = %s", i, ready)
		}
	}
}
