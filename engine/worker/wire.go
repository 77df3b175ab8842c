package worker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// MaxMessage bounds one message between the operator and a worker: a
// render result larger than this is refused as over budget rather than
// read.
const MaxMessage = 64 << 20

// Operations a worker serves.
const (
	opRender     = "render"
	opReferences = "references"
	opCompile    = "compile"
	opConvert    = "convert"          // convert.go
	opCheck      = "checkConversions" // convcheck.go
)

// request is one evaluation asked of a worker.
type request struct {
	Op string `json:"op"`
	// Root, Kind and Revision name the compiled template: the resolved
	// templates directory, the package, and the revision the operator
	// holds (the worker refuses another).
	Root     string `json:"root"`
	Kind     string `json:"kind"`
	Revision string `json:"revision,omitempty"`
	// Files are the revision's files (template.Kind.Files), sent when the
	// worker found another revision on disk.
	Files map[string][]byte `json:"files,omitempty"`

	Parent     map[string]any            `json:"parent,omitempty"`
	Observed   map[string]map[string]any `json:"observed,omitempty"`
	Referenced map[string]wireReferenced `json:"referenced,omitempty"`
	Options    wireOptions               `json:"options"`

	// Object is converted to the version ToVersion (opConvert).
	Object    map[string]any `json:"object,omitempty"`
	ToVersion string         `json:"toVersion,omitempty"`

	// Specs are round-tripped through the kind's conversions (opCheck).
	Specs []convert.Spec `json:"specs,omitempty"`
}

type wireReferenced struct {
	Objects []map[string]any `json:"objects,omitempty"`
	List    bool             `json:"list,omitempty"`
}

// wireOptions are render.Options as data: the scope of each allowed kind
// is asked of the operator's Scope before the request is sent.
type wireOptions struct {
	Allowed     string          `json:"allowed,omitempty"`
	Readable    string          `json:"readable,omitempty"`
	Namespaced  map[string]bool `json:"namespaced,omitempty"`
	MaxChildren int             `json:"maxChildren,omitempty"`
	Budget      budget.Budget   `json:"budget"`
	// Limits bound the template files a worker reads to compile a kind.
	Limits template.Limits `json:"limits"`
}

// response is a worker's answer to a request.
type response struct {
	Result *wireResult `json:"result,omitempty"`
	// Packed is a render's result as render.Pack holds it (Result when it
	// cannot be packed): the operator's memo keeps it as it came, and it
	// is read without a JSON decode of every value.
	Packed     *wirePacked     `json:"packed,omitempty"`
	References []wireReference `json:"references,omitempty"`
	Revision   string          `json:"revision,omitempty"`
	Err        *wireError      `json:"err,omitempty"`
	Abandoned  bool            `json:"abandoned,omitempty"`
	// NeedFiles: the worker found another revision on disk than the one
	// asked for; the request is to be sent again with its Files.
	NeedFiles bool `json:"needFiles,omitempty"`
	// CPU is the worker's CPU time (user and system) when it answered.
	CPU   time.Duration `json:"cpu"`
	Hello *hello        `json:"hello,omitempty"`

	// Converted is the object converted, Memo what the operator's memo
	// keeps of the conversion (opConvert).
	Converted map[string]any `json:"converted,omitempty"`
	Memo      *convert.Memo  `json:"memo,omitempty"`
}

type hello struct {
	PID int `json:"pid"`
}

type wireResult struct {
	Children []wireChild    `json:"children,omitempty"`
	Status   map[string]any `json:"status,omitempty"`
	Ready    bool           `json:"ready"`
	// ReadyByDefault is render.Result's.
	ReadyByDefault bool           `json:"readyByDefault,omitempty"`
	Immutable      map[string]any `json:"immutable,omitempty"`
	// Conditions are the template's own conditions.
	Conditions []render.Condition `json:"conditions,omitempty"`
}

// wirePacked is render.Packed's Parts.
type wirePacked struct {
	Data     []byte            `json:"data"`
	Children []wirePackedChild `json:"children,omitempty"`
	Ready    bool              `json:"ready"`
	// ReadyByDefault is render.Result's.
	ReadyByDefault bool               `json:"readyByDefault,omitempty"`
	Conditions     []render.Condition `json:"conditions,omitempty"`
}

// wirePackedChild is a child without its object, which is in the data.
type wirePackedChild struct {
	ID        string        `json:"id"`
	Policy    render.Policy `json:"policy"`
	Wave      int           `json:"wave,omitempty"`
	ReadyWhen *bool         `json:"readyWhen,omitempty"`
}

type wireChild struct {
	ID        string         `json:"id"`
	Object    map[string]any `json:"object"`
	Policy    render.Policy  `json:"policy"`
	Wave      int            `json:"wave,omitempty"`
	ReadyWhen *bool          `json:"readyWhen,omitempty"`
}

type wireReference struct {
	ID  string           `json:"id"`
	Ref render.Reference `json:"ref"`
}

// wireError is an error as the operator must tell it: a render Error
// (Reason set) stalls the CR, any other is retried.
type wireError struct {
	Reason   string   `json:"reason,omitempty"`
	Messages []string `json:"messages,omitempty"`
	// TooLarge is a conversion refused for the size of its annotation,
	// which the operator reports on the CR (errors.As finds it).
	TooLarge *convert.AnnotationTooLargeError `json:"tooLarge,omitempty"`
	// Converted is the object of a conversion answered without the fields
	// TooLarge names (convert.IncompleteError).
	Converted map[string]any `json:"converted,omitempty"`
}

func (e *wireError) err() error {
	if e.Reason != "" {
		return &render.Error{Reason: e.Reason, Messages: e.Messages}
	}
	msg := firstOr(e.Messages, "worker error")
	if e.TooLarge != nil && e.Converted != nil {
		return &messageError{msg: msg, cause: &convert.IncompleteError{AnnotationTooLargeError: e.TooLarge, Subject: subjectOf(e.Converted), Object: &unstructured.Unstructured{Object: e.Converted}}}
	}
	if e.TooLarge != nil {
		return &messageError{msg: msg, cause: e.TooLarge}
	}
	return fmt.Errorf("%s", msg)
}

// messageError is an error's message as the worker wrote it, around the
// typed error it wrapped.
type messageError struct {
	msg   string
	cause error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.cause }

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

// writeMessage writes v as a length-prefixed JSON message.
func writeMessage(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxMessage {
		return fmt.Errorf("message of %s exceeds %s", budget.MiB(int64(len(b))), budget.MiB(MaxMessage))
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// readMessage reads one message into v. Numbers in maps decode as int64
// when integral, float64 otherwise, as unstructured objects hold them.
func readMessage(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxMessage {
		return fmt.Errorf("message of %s exceeds %s", budget.MiB(int64(size)), budget.MiB(MaxMessage))
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return utiljson.Unmarshal(b, v)
}

func objects(in map[string]*unstructured.Unstructured) map[string]map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]map[string]any, len(in))
	for id, o := range in {
		out[id] = o.Object
	}
	return out
}

func unstructureds(in map[string]map[string]any) map[string]*unstructured.Unstructured {
	if in == nil {
		return nil
	}
	out := make(map[string]*unstructured.Unstructured, len(in))
	for id, o := range in {
		out[id] = &unstructured.Unstructured{Object: o}
	}
	return out
}

// subjectOf names an object given as data: Kind ns/name.
func subjectOf(obj map[string]any) string {
	return subject(&unstructured.Unstructured{Object: obj})
}
