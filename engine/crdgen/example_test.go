package crdgen_test

import (
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/crdgen"
)

func ExampleSchema() {
	v := cuecontext.New().CompileString(`
#Spec: {
	// replicas is the number of Redis pods.
	replicas: *3 | int & >=1
	mode?:    "standalone" | "cluster"
	version:  string
}`)
	s, err := crdgen.Schema(v.LookupPath(cue.ParsePath("#Spec")))
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := yaml.Marshal(s)
	fmt.Print(string(b))
	// Output:
	// properties:
	//   mode:
	//     enum:
	//     - standalone
	//     - cluster
	//     type: string
	//   replicas:
	//     default: 3
	//     description: replicas is the number of Redis pods.
	//     minimum: 1
	//     type: integer
	//   version:
	//     type: string
	// required:
	// - version
	// type: object
}

func ExampleSchema_error() {
	v := cuecontext.New().CompileString("#Spec: {\n\tpair: [int, string]\n}", cue.Filename("spec.cue"))
	_, err := crdgen.Schema(v.LookupPath(cue.ParsePath("#Spec")))
	fmt.Println(err)
	// Output:
	// #Spec.pair (spec.cue:2:2): list [int, string] has fixed elements, which a structural schema cannot express; use [...T]
}
