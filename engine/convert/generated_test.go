package convert_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/crdgen"
)

// checkGenerated runs the round trips of the specs generated from the
// CRD of the kind src, as `cueop vet` and the operator's reload do.
func checkGenerated(t *testing.T, src string) error {
	t.Helper()
	set, err := templateLoad(t, map[string]string{"app/app.cue": src})
	if err != nil {
		t.Fatal(err)
	}
	crd, err := crdgen.Generate(set.Kinds[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := convert.New(set.Kinds[0])
	if err != nil {
		t.Fatal(err)
	}
	return c.CheckSpecs(convert.GeneratedSpecs(crd))
}

// TestGeneratedSpecsFillListsAndLeaveOptionalsOut: the generated specs
// hold lists of one and two elements, and each optional field absent
// beside its siblings set, so that a conversion that loses what only they
// show is refused without any golden case: the port of a list's element,
// the second element of a list, an optional field kept only when its
// sibling is set.
func TestGeneratedSpecsFillListsAndLeaveOptionalsOut(t *testing.T) {
	const head = `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
parent: spec: #Spec
children: {}
`
	for _, tc := range []struct{ name, src, want string }{{
		name: "the port of each element forgotten",
		src: head + `#Spec: ports: *[] | [...{name: string, port?: int}]
versions: v1: {
	#Spec: ports: *[] | [...{name: string, port?: int}]
	toHub: {in: spec: _, out: spec: ports: in.spec.ports}
	fromHub: {in: spec: _, out: spec: ports: [for p in in.spec.ports {name: p.name}]}
}
`,
		want: "conversion versions.v1.fromHub (v2 to v1) loses field spec.ports.0.port",
	}, {
		name: "the second element dropped",
		src: head + `#Spec: hosts: *[] | [...string]
versions: v1: {
	#Spec: hosts: *[] | [...string]
	toHub: {in: spec: _, out: spec: hosts: in.spec.hosts}
	fromHub: {in: spec: _, out: spec: hosts: [for i, h in in.spec.hosts if i == 0 {h}]}
}
`,
		want: "conversion versions.v1.fromHub (v2 to v1) loses field spec.hosts.1",
	}, {
		name: "an optional field kept only beside its sibling",
		src: head + `#Spec: {a?: string, b?: string}
versions: v1: {
	#Spec: {a?: string, b?: string}
	toHub: {in: spec: _, out: spec: in.spec}
	fromHub: {in: spec: _, out: spec: {if in.spec.a != _|_ {a: in.spec.a, if in.spec.b != _|_ {b: in.spec.b}}}}
}
`,
		want: "conversion versions.v1.fromHub (v2 to v1) loses field spec.b",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkGenerated(t, tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("round trips of the generated specs = %v, want %q", err, tc.want)
			}
			if fixed := strings.Replace(tc.src, "fromHub: {in: spec: _, out: spec: ", "fromHub: {in: spec: _, out: spec: in.spec, _lossy: ", 1); fixed != tc.src {
				if err := checkGenerated(t, fixed); err != nil {
					t.Errorf("the conversion that keeps everything: %v", err)
				}
			}
		})
	}
}

// TestRoundTripKeepsWhatTheSpokeDoesNotShow: a round trip that loses
// only what the spoke does not show (the second of two backups where v1
// shows the first, a retention beside each schedule, a variable's secret
// flag and its order where v1 shows a map) is what the annotation keeps,
// as the runtime does (TestWriteAtSpokeKeepsWhatOnlyTheHubHoldsOfAList):
// accepted; a value the spoke shows that comes back changed, or a field
// of an element both versions hold that the conversion forgets, is still
// refused.
func TestRoundTripKeepsWhatTheSpokeDoesNotShow(t *testing.T) {
	for _, tc := range []struct{ name, src, hub string }{
		{"firstShown", firstShown, `{"backups": [{"schedule": "a", "retention": 1, "class": "cold"}, {"schedule": "b", "retention": 2, "class": "fast"}]}`},
		{"scheduled", scheduled, `{"backups": [{"schedule": "a", "retention": 1}, {"schedule": "b", "retention": 2}]}`},
		{"envMap", envMap, `{"env": [{"name": "b", "value": "1", "secret": true}, {"name": "a", "value": "2"}]}`},
		{"nodeTags", nodeTags, `{"nodes": [{"name": "n", "tags": [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}]}]}`},
	} {
		c, err := load(t, tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckRoundTrip(spec(t, tc.hub), "v2", "v1"); err != nil {
			t.Errorf("%s: round trip of %s: %v", tc.name, tc.hub, err)
		}
	}
	for _, tc := range []struct{ name, src, want string }{{
		name: "a schedule shown changed",
		src:  strings.Replace(scheduled, `{schedule: s}`, `{schedule: s + "x"}`, 1),
		want: "conversion versions.v1.toHub (v1 to v2) changes field spec.backups.0.schedule",
	}, {
		name: "the retention both versions hold forgotten",
		src: `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Backup: {schedule: string, retention: *7 | int & >=1}
#Spec: backups: *[] | [...#Backup]
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: backups: *[] | [...#Backup]
	toHub: {in: spec: _, out: spec: backups: in.spec.backups}
	fromHub: {in: spec: _, out: spec: backups: [for b in in.spec.backups {schedule: b.schedule}]}
}
`,
		want: "conversion versions.v1.fromHub (v2 to v1) changes field spec.backups.0.retention",
	}} {
		c, err := load(t, tc.src)
		if err != nil {
			t.Fatal(err)
		}
		err = c.CheckRoundTrip(spec(t, `{"backups": [{"schedule": "a", "retention": 1}, {"schedule": "b", "retention": 2}]}`), "v2", "v1")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
