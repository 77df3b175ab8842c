package render_test

import (
	"encoding/binary"
	"testing"

	"github.com/cueop/cueop/engine/render"
)

// Tags as engine/render/inputs.go numbers them.
const (
	tNil byte = iota
	tFalse
	tTrue
	tInt
	tFloat
	tString
	tList
	tMap
	tNilMap
)

// packedOne is the data of one child whose object is body (a tagMap value),
// with a nil-map status and immutable values.
func packedOne(body []byte) []byte {
	b := binary.AppendUvarint(nil, 1)
	b = append(b, body...)
	return append(b, tNilMap, tNilMap)
}

// TestPackedOfEdges: inputs at each length and tag boundary are
// refused or unpack without panicking, checker and decoder agreeing.
func TestPackedOfEdges(t *testing.T) {
	u := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	cases := map[string]struct {
		data []byte
		n    int
		ok   bool
	}{
		"empty":                 {nil, 0, false},
		"no children, nil,nil":  {[]byte{0, tNil, tNil}, 0, true},
		"no children, nilmaps":  {[]byte{0, tNilMap, tNilMap}, 0, true},
		"status a list":         {[]byte{0, tList, 0, tNil}, 0, false},
		"status a string":       {[]byte{0, tString, 0, tNil}, 0, false},
		"child nil":             {[]byte{1, tNil, tNil, tNil}, 1, false},
		"child nilmap":          {[]byte{1, tNilMap, tNil, tNil}, 1, false},
		"float at end":          {cat([]byte{1, tMap, 1, 0, tFloat, 0, 0, 0, 0, 0, 0, 0}), 1, false},
		"float exact":           {cat([]byte{1, tMap, 1, 0, tFloat, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{tNil, tNil}), 1, true},
		"varint overflow int":   {cat([]byte{1, tMap, 1, 0, tInt}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, []byte{tNil, tNil}), 1, false},
		"varint 11 bytes":       {cat([]byte{1, tMap, 1, 0, tInt}, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, []byte{tNil, tNil}), 1, false},
		"min int64":             {cat([]byte{1, tMap, 1, 0, tInt}, binary.AppendVarint(nil, -1<<63), []byte{tNil, tNil}), 1, true},
		"string len huge":       {cat([]byte{1, tMap, 1, 0, tString}, u(1<<63), []byte{tNil, tNil}), 1, false},
		"string len maxuint":    {cat([]byte{1, tMap, 1, 0, tString}, u(^uint64(0)), []byte{tNil, tNil}), 1, false},
		"key len past end":      {cat([]byte{1, tMap, 1}, u(5), []byte{'a'}), 1, false},
		"list count past end":   {cat([]byte{1, tMap, 1, 0, tList}, u(3), []byte{tNil, tNil}), 1, false},
		"map count = rest":      {cat([]byte{1, tMap}, u(3), []byte{0, tNil, tNil}), 1, false},
		"nested nilmap":         {[]byte{1, tMap, 1, 0, tNilMap, tNil, tNil}, 1, true},
		"string in map":         {[]byte{1, tMap, 1, 0, tString, 2, 'h', 'i', tNil, tNil}, 1, true},
		"unknown tag":           {[]byte{1, tMap, 1, 0, 9, tNil, tNil}, 1, false},
		"trailing":              {[]byte{1, tMap, 0, tNil, tNil, 0}, 1, false},
		"children count varint": {cat(u(1<<40), []byte{tNil, tNil}), 0, false},
		"more children":         {[]byte{1, tMap, 0, tNil, tNil}, 2, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := render.PackedOf(c.data, make([]render.Child, c.n), render.Readiness{}, nil)
			if (err == nil) != c.ok {
				t.Fatalf("PackedOf error %v, want ok=%v", err, c.ok)
			}
			if err == nil {
				res := p.Unpack()
				if len(res.Children) != c.n {
					t.Errorf("%d children", len(res.Children))
				}
			}
		})
	}
	// Deep: maxPackedDepth lists, then one more.
	for _, depth := range []int{10000, 10001, 10002} {
		body := []byte{tMap, 1, 0}
		for range depth - 1 {
			body = append(body, tList, 1)
		}
		body = append(body, tNil)
		p, err := render.PackedOf(packedOne(body), make([]render.Child, 1), render.Readiness{}, nil)
		t.Logf("depth %d: %v", depth, err)
		if err == nil {
			p.Unpack()
		}
	}
}
