package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestHelpListsTheFlagsEachCommandUses checks that the --help of every
// command lists the shared flags it uses and none of the others: the
// operator's logging flags only on run and dev, the render flags only on
// the commands that render, the template flags only on the commands that
// load templates.
func TestHelpListsTheFlagsEachCommandUses(t *testing.T) {
	loads := []string{"render", "crd", "vet", "test", "manifests", "diff", "run", "dev"}
	renders := []string{"render", "vet", "test", "manifests", "diff", "run", "dev"}
	serves := []string{"run", "dev"}
	groups := map[string][]string{ // flag: the commands that use it
		"templates": loads, "module-cache": loads, "registry-config": loads, "registry-timeout": loads,
		"render-cpu": loads, "render-memory": loads, "render-max-abandoned": loads,
		"template-max-file-size": loads, "template-max-total-size": loads,
		"allowed-kinds": renders, "readable-kinds": renders, "data-kinds": renders,
		"registry-poll-interval": serves,
		"zap-log-level":          serves, "zap-encoder": serves, "zap-devel": serves, "zap-stacktrace-level": serves, "zap-time-encoding": serves,
	}
	for _, cmd := range []string{"render", "crd", "vet", "test", "version", "manifests", "diff", "run", "dev"} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{cmd, "--help"})
		if err := root.Execute(); err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		help := out.String()
		if !strings.Contains(help, "cueop "+cmd) {
			t.Fatalf("%s --help is not its help:\n%s", cmd, help)
		}
		for flag, users := range groups {
			listed := strings.Contains(help, "--"+flag+" ")
			if uses := slices.Contains(users, cmd); listed != uses {
				t.Errorf("cueop %s --help lists --%s: %v, want %v", cmd, flag, listed, uses)
			}
		}
	}
}

// TestTemplateFlagsBeforeTheCommand: the flags a command takes may come
// before its name, as the docs and the Makefile write them.
func TestTemplateFlagsBeforeTheCommand(t *testing.T) {
	_, err := run(t, "--render-cpu", "2s", "--allowed-kinds", "Pod,Service", "render", "-f", "../../config/samples/cache_v1_rediscluster.yaml")
	if err == nil || !strings.Contains(err.Error(), "kind ConfigMap is not in the allowed kinds (Pod,Service)") {
		t.Fatalf("render with --allowed-kinds before it: error %v, want ConfigMap refused", err)
	}
	_, err = run(t, "--allowed-kinds", "Pod", "crd")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --allowed-kinds") {
		t.Errorf("crd --allowed-kinds: error %v, want an unknown flag", err)
	}
}
