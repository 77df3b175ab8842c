package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"

	"github.com/cueop/cueop/engine/source/sourcetest"
)

// syncBuffer is a bytes.Buffer safe for the goroutines that log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunLogsOnlyJSONRecords: what cueop run logs, the template source's
// lines (--templates from a registry) and client-go's (klog) included, is
// JSON records of its logger on its standard error, no text line among
// them. The run stops at its kubeconfig, which does not exist.
func TestRunLogsOnlyJSONRecords(t *testing.T) {
	t.Cleanup(func() { setKlogLogger(klogStderr) })
	reg := sourcetest.Start(t)
	reg.Publish(t, "example.com/redis@v1", "v1.0.0", sourcetest.RedisModule(t, "../..", "example.com/redis@v1"))
	root := newRoot()
	out := &syncBuffer{}
	root.SetOut(out)
	root.SetErr(out)
	dir := t.TempDir()
	root.SetArgs([]string{"run", "--templates", reg.Ref("example.com/redis", "v1"), "--module-cache", filepath.Join(dir, "modules"),
		"--registry-config", filepath.Join(dir, "no-config.json"), "--kubeconfig", filepath.Join(dir, "no-kubeconfig")})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "no-kubeconfig") {
		t.Fatalf("run with no kubeconfig: error %v, want one naming it", err)
	}
	klog.InfoS("a client-go line") // as leader election and the reflectors log
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec struct{ Msg, Logger string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON record of the log: %q", line)
			continue
		}
		msgs = append(msgs, rec.Logger+": "+rec.Msg)
	}
	for _, want := range []string{"templates: registry config not there: asking the registries anonymously", ": a client-go line"} {
		if !slices.Contains(msgs, want) {
			t.Errorf("no record %q in the log: %q", want, msgs)
		}
	}
}
