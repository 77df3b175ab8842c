package workertest

import "strings"

// HostileVersionsKind is a kind served at v1 (its hub) and v2 whose
// conversion to v2 a tenant controls within the bounds of #Spec: with
// trigger "now", fromHub repeats line count times (a terabyte at once:
// ConversionBombSpec) and runs three nested loops over items (2000 of
// them: SlowConversionSpec). No spec generated from its schema sets that
// trigger, so a new revision's round-trip check passes it (a conversion
// that explodes on a spec at the schema's bounds is refused at load). The
// default spec converts at once; its render is one ConfigMap.
const HostileVersionsKind = `package hostileversions

import (
	"list"
	"strings"
)

resource: {group: "hostileversions.test.example", version: "v1", kind: "Shifter"}
#Spec: {
	line:  *"x" | string & strings.MaxRunes(1000000)
	count: *1 | int & >=0 & <=1000000
	items: *[] | [...int] & list.MaxItems(2000)
	trigger?: string
}
parent: {metadata: {name: string, namespace: string}, spec: #Spec}
children: cm: {
	apiVersion: "v1", kind: "ConfigMap"
	metadata: name: parent.metadata.name
	data: count: "\(parent.spec.count)"
}
ready: true
versions: v2: {
	#Spec: {
		line:      *"x" | string & strings.MaxRunes(1000000)
		count:     *1 | int & >=0 & <=1000000
		items:     *[] | [...int] & list.MaxItems(2000)
		trigger?:  string
		repeated?: string
		loops?:    int
	}
	toHub: {
		in: spec: _
		out: spec: {line: in.spec.line, count: in.spec.count, items: in.spec.items,
			if in.spec.trigger != _|_ {trigger: in.spec.trigger}}
	}
	fromHub: {
		in: spec: _
		out: spec: {
			line:  in.spec.line
			count: in.spec.count
			items: in.spec.items
			if in.spec.trigger != _|_ {
				trigger: in.spec.trigger
				if in.spec.trigger == "now" {
					repeated: strings.Repeat(in.spec.line, in.spec.count)
					loops:    len([for a in in.spec.items for b in in.spec.items for c in in.spec.items if a+b+c < 0 {a}])
				}
			}
		}
	}
}
`

// ConversionBombSpec is a spec of HostileVersionsKind at its bounds whose
// conversion to v2 allocates a terabyte at once: a line of a million
// runes repeated a million times.
func ConversionBombSpec() map[string]any {
	return map[string]any{"line": strings.Repeat("x", 1000000), "count": int64(1000000), "trigger": "now"}
}

// SlowConversionSpec is a spec of HostileVersionsKind whose conversion
// to v2 runs three nested loops over 2000 items.
func SlowConversionSpec() map[string]any {
	s := SlowSpec()
	s["trigger"] = "now"
	return s
}
