package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
)

// GateWarnings says, for `cueop vet`, where a wave gate can never open in
// the render of in: a readiness expression (readyWhen) that reads, through
// other fields (waveCycles refuses a direct read), a child of a later wave,
// which is applied only once this child is ready; or that reads a field no
// object of the child's kind has (by the built-in kinds' schemas), so that
// it never becomes true. Each warning starts with the CUE position of the
// read. A render that fails has no warnings: vet reports its error.
func GateWarnings(in Inputs, opts Options) []string {
	if !in.Kind.ReadyWhen {
		return nil
	}
	res, err := RenderInputs(in, opts)
	if err != nil {
		return nil
	}
	byID := map[string]*Child{}
	for i := range res.Children {
		byID[res.Children[i].ID] = &res.Children[i]
	}
	rv := fill(in.Kind, in.Parent, in).LookupPath(template.PathReadyWhen)
	ids, vals, err := sortedIDs(rv)
	if err != nil {
		return nil
	}
	var out []string
	for _, id := range ids {
		if c := byID[id]; c != nil {
			for _, r := range template.ObservedReads(sources(vals[id])) {
				out = append(out, gateWarning(id, c, byID, r)...)
			}
		}
	}
	return out
}

// gateWarning is what is wrong with one read of readyWhen.<id>, if anything.
func gateWarning(id string, c *Child, byID map[string]*Child, r template.ObservedRead) []string {
	d := byID[r.ID]
	if d == nil {
		return nil
	}
	at := template.ShortPos(r.Pos) + ": readyWhen." + id + ": reads " + r.Read()
	var out []string
	if d.Wave > c.Wave && r.Via != "" {
		out = append(out, fmt.Sprintf("%s (through %s), a child of wave %d, which is applied only once %s (wave %d) is ready: the gate never opens",
			at, r.Via, d.Wave, id, c.Wave))
	}
	if len(r.Path) > 0 && !hasField(d.Object, r.Path) {
		out = append(out, fmt.Sprintf("%s: no %s has that field, so %s is never ready: the gate never opens", at, d.Object.GetKind(), id))
	}
	return out
}

// hasField reports whether objects of obj's kind may have the field at
// path, by the built-in schemas; true for a kind with none.
func hasField(obj *unstructured.Unstructured, path []string) bool {
	return HasField(obj.GroupVersionKind(), path)
}
