package render_test

import (
	"os"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

func variantSrc(b *testing.B, drop ...string) string {
	src, err := os.ReadFile("../../templates/rediscluster/rediscluster.cue")
	if err != nil {
		b.Fatal(err)
	}
	s := string(src)
	s = strings.Replace(s, "@extern(embed)", "", 1)
	s = strings.Replace(s, "_ @embed(file=redis.conf, type=text)", `"conf"`, 1)
	for _, d := range drop {
		i := strings.Index(s, "\n"+d)
		if i < 0 {
			b.Fatalf("no %s", d)
		}
		j := strings.Index(s[i+1:], "\n}\n")
		if !strings.HasSuffix(d, "{") && !strings.HasPrefix(d, "status") {
			j = strings.Index(s[i+1:], "\n") - 1
		}
		if strings.HasPrefix(d, "_readyPods") {
			j = strings.Index(s[i+1:], "\n]\n")
		}
		s = s[:i] + s[i+1+j+2:]
	}
	return s
}

func BenchmarkZVariants(b *testing.B) {
	arg := fillArg(3)
	for name, drop := range map[string][]string{
		"full":        nil,
		"-resource":   {"resource: {"},
		"-status": {"status: #Status", "ready:", "_readyPods:", "_minReady:"},
		"-children": {"children: {"},
	} {
		ctx := cuecontext.New()
		v := ctx.CompileString(variantSrc(b, drop...))
		if v.Err() != nil {
			b.Fatal(v.Err())
		}
		v = v.FillPath(cue.ParsePath("parent.spec"), v.LookupPath(cue.ParsePath("#Spec")))
		for _, obsName := range []string{"obs", "noobs"} {
		a := arg
		if obsName == "noobs" {
			a = map[string]any{"parent": arg["parent"]}
		}
		b.Run(name+"/"+obsName, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := v.FillPath(cue.Path{}, a)
				if w.Err() != nil {
					b.Fatal(w.Err())
				}
			}
		})
		}
	}
}
