package crdgen

import "testing"

func TestZZDbg(t *testing.T) {
	src := `#Spec: {
"x-y"?: *(7 | 10 | *-10 | -9) | (float64)
"x-y": >3 | <1
}`
	k := compileKind(t, src)
	crd, err := Generate(k)
	if err != nil { t.Fatal(err) }
	t.Logf("%s", toYAML(t, specOf(crd)))
	t.Logf("%s", dump(k.Spec.LookupPath(cue_path("x-y")), 0))
}
