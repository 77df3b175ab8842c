package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/internal/useragent"
)

// globals are the flags several subcommands share (each registers the
// groups it uses: addTemplateFlags, addRenderFlags).
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
	useragent.Version = version
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
	root.PersistentPreRunE = g.openSource // source.go
	render, crd, vet, test := newRender(g), newCRD(g), newVet(g), newTest(g)
	manifests, diff := newManifests(g), newDiff(g)
	run, dev := newServeCommands(g) // serve.go
	// Each command takes the flags it uses, no others: --help lists what
	// matters. Flags are the command's own, yet may still come before its
	// name (`cueop --templates dir vet`): cobra parses them all with the
	// command's flags.
	for _, c := range []*cobra.Command{render, crd, vet, test, manifests, diff, run, dev} {
		g.addTemplateFlags(c.Flags()) // every command that loads templates
	}
	for _, c := range []*cobra.Command{render, vet, test, manifests, diff, run, dev} {
		g.addRenderFlags(c.Flags()) // every command that renders
	}
	for _, c := range []*cobra.Command{run, dev} {
		g.source.registerPoll(c.Flags()) // the commands that follow moving references
	}
	root.AddCommand(render, crd, vet, test, newVersion(), manifests, diff, newWorker(), run, dev)
	return root
}

// addTemplateFlags adds the flags of loading the templates: where they
// are (a directory or module references, and the registry's settings),
// and the bounds of their files and of evaluating them.
func (g *globals) addTemplateFlags(fl *pflag.FlagSet) {
	fl.Var(&templatesValue{s: &g.templates}, "templates", "templates directory (a CUE module), or CUE module references oci://host/module@v1.2.0 (@v1 follows the newest v1, @v1.2.0@sha256:... pins a digest; comma-separated, repeated, or @file)")
	g.budget.register(fl)
	g.limits.register(fl)
	g.source.register(fl)
}

// addRenderFlags adds the flags of rendering CRs: the kinds templates may
// create, read and must keep.
func (g *globals) addRenderFlags(fl *pflag.FlagSet) {
	fl.StringVar(&g.allowedKinds, "allowed-kinds", render.DefaultAllowedKinds,
		"comma-separated child kinds templates may create (Kind or Kind.group)")
	fl.StringVar(&g.readableKinds, "readable-kinds", render.DefaultReadableKinds,
		"comma-separated kinds templates may reference (read), in the CR's namespace (Kind or Kind.group); Secrets only when listed")
	fl.StringVar(&g.dataKinds, "data-kinds", render.DefaultDataKinds,
		"comma-separated kinds that hold data (Kind or Kind.group): such a child is released, not deleted, when pruned or when its CR is deleted, unless its policy says prune: always / onDelete: delete")
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
