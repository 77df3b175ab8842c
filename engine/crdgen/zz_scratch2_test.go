package crdgen

import (
	"fmt"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

func TestScratchTime(t *testing.T) {
	v := cuecontext.New().CompileString("import \"time\"\nimport \"net\"\n#Spec: {at?: time.Time, ip?: string & net.IPv4, x: #X}\n#X: int", cue.Filename("spec.cue"))
	for _, f := range []string{"at?", "ip?", "x?"} {
		fv := v.LookupPath(cue.MakePath(cue.Def("#Spec"), cue.Str(f[:len(f)-1]).Optional()))
		t.Logf("%s: %s", f, dump(fv, 0))
		op, args := fv.Expr()
		if op == cue.AndOp {
			fv = args[1]
		}
		root, p := fv.ReferencePath()
		tg := root.LookupPath(p)
		t.Logf("  root=%v path=%v target kind=%v ik=%v sprint=%q", root.Exists(), p, tg.Kind(), tg.IncompleteKind(), fmt.Sprint(tg))
		t.Logf("  target dump %s", dump(tg, 0))
		t.Logf("  root buildinstance=%v  rootpath=%v", root.BuildInstance() != nil, root.Path())
	}
}

func cue_path(s string) cue.Path { return cue.MakePath(cue.Str(s)) }
