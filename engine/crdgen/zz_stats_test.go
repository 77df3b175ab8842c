package crdgen

import (
	"math/rand"
	"regexp"
	"strings"
	"sort"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

func TestZZStats(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	compileErr, genErr, ok := 0, 0, 0
	msgs := map[string]int{}
	re := regexp.MustCompile(`\(spec\.cue:[0-9:]+\)|#Spec[^ ]*|#Status[^ ]*|[0-9]+`)
	for i := 0; i < 3000; i++ {
		data := make([]byte, 10+r.Intn(60))
		r.Read(data)
		src := newGen(data).source()
		v := cuecontext.New().CompileString(src, cue.Filename("spec.cue"))
		if v.Err() != nil {
			compileErr++
			continue
		}
		k := testKind(v)
		crd, err := Generate(k)
		if err != nil {
			genErr++
			if strings.HasSuffix(err.Error(), "invalid value") { t.Logf("SRC %s\nERR %v", src, err) }
			msgs[re.ReplaceAllString(err.Error(), "N")]++
			continue
		}
		ok++
		if err := Validate(crd); err != nil {
			t.Errorf("invalid: %s\n%v", src, err)
		}
	}
	t.Logf("compile errors %d, generate errors %d, ok %d", compileErr, genErr, ok)
	type kv struct{ k string; v int }
	var l []kv
	for k, v := range msgs { l = append(l, kv{k, v}) }
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	for i, e := range l { if i < 40 { t.Logf("%5d %s", e.v, e.k) } }
}
