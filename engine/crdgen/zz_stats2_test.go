package crdgen

import (
	"math/rand"
	"regexp"
	"sort"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

func TestZZStats2(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	msgs := map[string]int{}
	re := regexp.MustCompile(`spec\.cue:[0-9:]+|#Spec[^ ]*|#Status[^ ]*|[0-9]+|"[^"]*"`)
	for i := 0; i < 2000; i++ {
		data := make([]byte, 10+r.Intn(60))
		r.Read(data)
		src := newGen(data).source()
		v := cuecontext.New().CompileString(src, cue.Filename("spec.cue"))
		if v.Err() != nil {
			m := re.ReplaceAllString(v.Err().Error(), "N")
			if len(m) > 150 { m = m[:150] }
			msgs[m]++
		}
	}
	type kv struct{ k string; v int }
	var l []kv
	for k, v := range msgs { l = append(l, kv{k, v}) }
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	for i, e := range l { if i < 25 { t.Logf("%5d %s", e.v, e.k) } }
}
