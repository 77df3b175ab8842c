// Command cueop is a Kubernetes operator driven by CUE templates. Each
// subcommand lives in a file of its own and only parses flags and calls the
// engine packages.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker"
)

// globals are the flags every subcommand shares.
type globals struct {
	templates    string
	allowedKinds string
	// readableKinds is the allow-list of kinds templates may reference.
	readableKinds string
	// dataKinds are the kinds released, not deleted, by default.
	dataKinds string
	budget    budgetFlags
	limits    limitFlags
	source    sourceFlags // source.go
}

func main() {
	worker.Main() // a render worker the operator started: serves and exits
	trialMain()
	if err := newRoot().Execute(); err != nil {
		if !isExitOnly(err) {
			fmt.Fprintln(os.Stderr, "cueop:", err)
		}
		os.Exit(exitCode(err))
	}
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "cueop",
		Short:         "A Kubernetes operator driven by CUE templates",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	g.templates = "./templates"
	root.PersistentFlags().Var(&templatesValue{s: &g.templates}, "templates", "templates directory (a CUE module), or CUE module references oci://host/module@v1.2.0 (@v1 follows the newest v1, @v1.2.0@sha256:... pins a digest; comma-separated, repeated, or @file)")
	root.PersistentPreRunE = g.openSource // source.go
	root.PersistentFlags().StringVar(&g.allowedKinds, "allowed-kinds", render.DefaultAllowedKinds,
		"comma-separated child kinds templates may create (Kind or Kind.group)")
	root.PersistentFlags().StringVar(&g.readableKinds, "readable-kinds", render.DefaultReadableKinds,
		"comma-separated kinds templates may reference (read), in the CR's namespace (Kind or Kind.group); Secrets only when listed")
	root.PersistentFlags().StringVar(&g.dataKinds, "data-kinds", render.DefaultDataKinds,
		"comma-separated kinds that hold data (Kind or Kind.group): such a child is released, not deleted, when pruned or when its CR is deleted, unless its policy says prune: always / onDelete: delete")
	g.budget.register(root.PersistentFlags())
	g.limits.register(root.PersistentFlags())
	g.source.register(root.PersistentFlags())
	root.AddCommand(newRender(g), newCRD(g), newVet(g), newTest(g), newVersion())
	root.AddCommand(newManifests(g), newDiff(g), newWorker())
	addServeCommands(root, g)
	return root
}

func (g *globals) load() (*template.Set, error) {
	return template.LoadWith(g.templates, template.LoadOptions{Budget: g.budget.budget(), Limits: g.limits.limits()})
}

// loadForRender loads the templates and parses the render options from
// the flags: what every command that renders offline starts with.
func (g *globals) loadForRender() (*template.Set, render.Options, error) {
	set, err := g.load()
	if err != nil {
		return nil, render.Options{}, err
	}
	opts, err := g.renderOptions()
	return set, opts, err
}

// trialSetup is what a vet trial process needs to render kind k as the
// operator would (vettrial.go).
func (g *globals) trialSetup(k *template.Kind) trialSetup {
	b := g.budget.budget()
	return trialSetup{
		Templates: g.templates, Kind: k.Name, Budget: b, Limits: g.limits.limits(),
		AllowedKinds: g.allowedKinds, ReadableKinds: g.readableKinds, AddressSpace: trialAddressSpace(b),
	}
}

func (g *globals) renderOptions() (render.Options, error) {
	allowed, err := render.ParseKindSet(g.allowedKinds)
	if err != nil {
		return render.Options{}, err
	}
	readable, err := render.ParseKindSet(g.readableKinds)
	if err != nil {
		return render.Options{}, fmt.Errorf("--readable-kinds: %w", err)
	}
	data, err := render.ParseKindSet(g.dataKinds)
	if err != nil {
		return render.Options{}, fmt.Errorf("--data-kinds: %w", err)
	}
	return render.Options{AllowedKinds: allowed, ReadableKinds: readable, DataKinds: data, Budget: g.budget.budget()}, nil
}
