package worker

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/jsonenc"
)

// frame encodes req as one message to a worker. A request larger than
// MaxMessage is refused before any worker is taken: a render Error
// (wellknown.ReasonRenderBudget, which stalls the CR until its inputs change)
// that names the CR, the request's size and its largest inputs.
func frame(req *request) ([]byte, error) {
	// The objects (parent, observed children, object to convert) are
	// encoded by jsonenc, without encoding/json's reflection, after the
	// rest of the request; the worker decodes members in any order.
	rest := *req
	rest.Parent, rest.Observed, rest.Object = nil, nil, nil
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	if err := json.NewEncoder(&buf).Encode(&rest); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("}"))
	b, err := appendObjects(b, req)
	if err != nil {
		return nil, err
	}
	b = append(b, '}')
	size := len(b) - 4
	if size > MaxMessage {
		return nil, requestTooLarge(req, size)
	}
	binary.BigEndian.PutUint32(b, uint32(size))
	return b, nil
}

// appendObjects appends to b, a JSON object's members without its closing
// brace, req's parent, observed children and object, each a member when
// not empty (as their omitempty tags say).
func appendObjects(b []byte, req *request) ([]byte, error) {
	var err error
	member := func(name string) { b = append(append(append(b, ',', '"'), name...), '"', ':') }
	if len(req.Parent) > 0 {
		member("parent")
		if b, err = jsonenc.Append(b, req.Parent); err != nil {
			return nil, err
		}
	}
	if len(req.Observed) > 0 {
		member("observed")
		b = append(b, '{')
		for i, id := range slices.Sorted(maps.Keys(req.Observed)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(jsonenc.AppendString(b, id), ':')
			if b, err = jsonenc.Append(b, req.Observed[id]); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if len(req.Object) > 0 {
		member("object")
		if b, err = jsonenc.Append(b, req.Object); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// requestTooLarge is the refusal of req, size bytes encoded.
func requestTooLarge(req *request, size int) error {
	type input struct {
		name, note string
		size       int
	}
	var inputs []input
	add := func(name, note string, v any) {
		b, _ := json.Marshal(v)
		inputs = append(inputs, input{name, note, len(b)})
	}
	add("parent", "", req.Parent)
	for id, o := range req.Observed {
		add("observed."+id, "", o)
	}
	for id, r := range req.Referenced {
		add("references."+id, fmt.Sprintf(" (%d objects)", len(r.Objects)), r.Objects)
	}
	if req.Files != nil {
		add("template files", "", req.Files)
	}
	slices.SortFunc(inputs, func(a, b input) int { return cmp.Or(cmp.Compare(b.size, a.size), strings.Compare(a.name, b.name)) })
	var largest []string
	for _, in := range inputs[:min(len(inputs), 3)] {
		largest = append(largest, in.name+" "+budget.MiB(int64(in.size))+in.note)
	}
	meta, _ := req.Parent["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	kind, _ := req.Parent["kind"].(string)
	subject := fmt.Sprintf("%s %s/%s", kind, ns, name)
	if name == "" {
		subject = "package " + req.Kind
	}
	return &render.Error{Reason: wellknown.ReasonRenderBudget, Messages: []string{fmt.Sprintf(
		"%s: %s request of %s exceeds the %s a render worker reads: not sent (its largest inputs: %s; reference fewer or smaller objects)",
		subject, req.Op, budget.MiB(int64(size)), budget.MiB(MaxMessage), strings.Join(largest, ", "))}}
}
