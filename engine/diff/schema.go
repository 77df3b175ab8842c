package diff

import (
	"context"
	"fmt"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/schemaguard"
	"github.com/cueop/cueop/engine/template"
)

// checkSchema adds to r's errors the refusal of k's revision by an
// operator that installs CRDs, for a breaking change to the schema of a
// kind with stored CRs (schemaguard.Check). The kind's CRs are still
// diffed, as the revision would render them if it were taken (by an
// operator that leaves CRDs to the administrator).
func (d *differ) checkSchema(ctx context.Context, k *template.Kind, r *Report) {
	crd, err := crdgen.Generate(k)
	if err != nil {
		r.Errors = append(r.Errors, err.Error()) // names the kind and the CRD
		return
	}
	live, err := schemaguard.Live(ctx, d.o.Client, crd.Name)
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
		return
	}
	refusal, err := schemaguard.Check(ctx, d.o.Client, k, live, crd)
	switch {
	case err != nil:
		r.Errors = append(r.Errors, err.Error())
	case refusal != nil && refusal.Stored > 0:
		r.Errors = append(r.Errors, fmt.Sprintf("template %s: an operator that installs CRDs (--install-crds, cueop dev) "+
			"refuses this revision and keeps serving the one it has: %v", k.Name, refusal))
	}
}
