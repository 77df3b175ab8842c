package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/admission"
	"github.com/cueop/cueop/engine/diff"
	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// exitError ends cueop with code; err, when set, is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode is the process exit code for err (nil: 0).
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	return 1
}

// isExitOnly reports whether err only carries an exit code, with nothing to
// print.
func isExitOnly(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.err == nil
}

type diffFlags struct {
	kubeconfig, namespace, selector, file, output, color string
	kinds                                                []string
	workers, burst                                       int
	qps                                                  float32
	serverSide                                           bool
	apply                                                diff.ApplyMode // from --server-side, when given
	// identity is which ServiceAccount each kind acts as, as `cueop run`
	// is told (identity.go): its label is on every child.
	identity identityFlags
}

func newDiff(g *globals) *cobra.Command {
	f := &diffFlags{}
	cmd := &cobra.Command{
		Use:   "diff [-n NS] [-l SELECTOR] [--kind K] [-f cr.yaml [--server-side[=false]]] [-o json]",
		Short: "Show what the templates would change in a live cluster, writing nothing",
		Long: `diff renders every CR of the templates' kinds that the cluster has (or the CRs of
-f) over the children that exist, as the controller would, and compares each child
with the live one through a server-side dry-run apply under cueop's field manager.
The objects a template references are read in each CR's namespace, within
--readable-kinds ($CUEOP_READABLE_KINDS), as the controller reads them; children of a
wave the controller would hold back behind a lower one not ready say so.
With -f, each CR is previewed as kubectl apply would change it: client-side (a
JSON merge patch, three-way from the live CR's last-applied-configuration, the
file and the live CR) when the live CR was applied client-side, server-side
otherwise; --server-side or --server-side=false chooses, and a line per CR
says which it previews.
The children carry the label of the ServiceAccount their kind acts as, as
the operator writes them: give diff the identity flags cueop run was given
(--identity-namespace, --service-account, --shared-identity; the defaults
are run's, and cueop dev's).
It writes nothing. Exit code: 0 nothing would change, 1 something would, 2 an error
(a CR that cannot be rendered, a child the API server refuses, a failed request).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// As cueop run: $CUEOP_ALLOWED_KINDS and $CUEOP_READABLE_KINDS
			// unless --allowed-kinds and --readable-kinds.
			allowedKindsFromEnv(cmd, g)
			f.identity.fromEnv(cmd) // as cueop run, in the operator's pod
			if cmd.Flags().Changed("server-side") {
				f.apply = diff.ApplyClientSide
				if f.serverSide {
					f.apply = diff.ApplyServerSide
				}
			}
			return runDiff(cmd, g, f)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{2, err} })
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the CRs of this namespace only (default: all namespaces)")
	fl.StringVarP(&f.selector, "selector", "l", "", "the CRs matching this label selector only")
	fl.StringSliceVar(&f.kinds, "kind", nil, "the CRs of these kinds only (Kind, Kind.group or plural)")
	fl.StringVarP(&f.file, "filename", "f", "", "diff the CRs of this YAML file, as applying it would make them")
	fl.BoolVar(&f.serverSide, "server-side", false, "with -f: preview kubectl apply --server-side (true) or client-side kubectl apply (false); unset: client-side when the live CR has a last-applied-configuration")
	fl.StringVarP(&f.output, "output", "o", "text", "text (summary, then diffs), summary (no diffs) or json")
	fl.StringVar(&f.color, "color", "auto", "auto (on a terminal, unless $NO_COLOR), always or never")
	fl.IntVar(&f.workers, "concurrency", diff.DefaultWorkers, "CRs diffed at once")
	fl.Float32Var(&f.qps, "kube-api-qps", operator.DefaultQPS, "client-side limit of API requests per second")
	fl.IntVar(&f.burst, "kube-api-burst", operator.DefaultBurst, "client-side burst of API requests")
	f.identity.registerActing(fl, runIdentityNamespace())
	return cmd
}

func runDiff(cmd *cobra.Command, g *globals, f *diffFlags) error {
	if f.output != "text" && f.output != "json" && f.output != "summary" {
		return &exitError{2, fmt.Errorf("--output %q: want text, summary or json", f.output)}
	}
	opts, err := diffOptions(g, f)
	if err != nil {
		return &exitError{2, err}
	}
	report, err := diff.Run(context.Background(), opts)
	if err != nil {
		return &exitError{2, err}
	}
	out := cmd.OutOrStdout()
	switch f.output {
	case "json":
		err = report.WriteJSON(out)
	case "summary":
		err = report.WriteSummary(out, useColor(f.color, out))
	default:
		err = report.WriteText(out, useColor(f.color, out))
	}
	if err != nil {
		return &exitError{2, err}
	}
	if err := admitAll(opts.Set, opts.Render); err != nil {
		return &exitError{2, err}
	}
	if code := report.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

func diffOptions(g *globals, f *diffFlags) (diff.Options, error) {
	set, err := g.load()
	if set == nil {
		return diff.Options{}, err
	}
	if len(set.Kinds) == 0 && err != nil {
		return diff.Options{}, err
	}
	ropts, err := g.renderOptions()
	if err != nil {
		return diff.Options{}, err
	}
	sel, err := labels.Parse(f.selector)
	if err != nil {
		return diff.Options{}, fmt.Errorf("--selector: %w", err)
	}
	files, err := diffFiles(f.file)
	if err != nil {
		return diff.Options{}, err
	}
	ids, err := f.identity.config() // nil: the shared identity
	if err != nil {
		return diff.Options{}, err
	}
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return diff.Options{}, err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return diff.Options{}, err
	}
	return diff.Options{Client: c, Set: set, Render: ropts, Namespace: f.namespace, Selector: sel,
		Kinds: f.kinds, Files: files, Apply: f.apply, Workers: f.workers,
		ChildLabels: func(k *template.Kind) map[string]string { return operator.ChildLabels(ids, k) }}, nil
}

// diffFiles reads the CRs of file ("" for none).
func diffFiles(file string) ([]*unstructured.Unstructured, error) {
	objs, err := readObjects(file) // render.go
	if err == nil && file != "" && len(objs) == 0 {
		err = fmt.Errorf("%s: no custom resource", file)
	}
	return objs, err
}

// useColor decides on colours: always, never, or auto (a terminal, and
// $NO_COLOR unset).
func useColor(mode string, out any) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	file, ok := out.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// admitAll runs the admission the operator runs on each kind of set
// (engine/admission), after the preview: a revision it would refuse fails
// the diff (exit 2) with the admission's words, beside what each CR
// would show (the operator serves a kind's first revision all the same,
// its CRs stalling; a later one not at all).
func admitAll(set *template.Set, opts render.Options) error {
	var errs []error
	for _, k := range set.Kinds {
		v := admission.Admit(context.Background(), admission.Input{Kind: k, Options: opts, Eval: render.InProcess{}})
		if err := v.Err(); err != nil {
			errs = append(errs, fmt.Errorf("kind %s: revision %s would be refused by the operator's admission (what `cueop vet` refuses): %w", k.Name, k.Revision, err))
		}
	}
	return errors.Join(errs...)
}
