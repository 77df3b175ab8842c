package worker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// envWorker, set in a worker's environment, makes Main serve as a worker;
// its value is the worker's memory limit in bytes.
const envWorker = "CUEOP_RENDER_WORKER"

// selfServes is set once Main ran in this process: only then can it start
// its own executable as a worker.
var selfServes atomic.Bool

// Main makes this binary able to serve as a worker. Call it first in main
// (and in TestMain of a test binary that runs an operator): in a process
// the pool started as a worker it serves on stdin and stdout and exits;
// elsewhere it returns at once.
func Main() {
	if v, ok := os.LookupEnv(envWorker); ok {
		limit, _ := strconv.ParseInt(v, 10, 64)
		stop := profileSelf(os.Getenv(envCPUProfile)) // profile.go
		code := Serve(os.Stdin, os.Stdout, limit)
		stop()
		os.Exit(code)
	}
	selfServes.Store(true)
}

// Serve is a worker: it limits its own memory to limit bytes of address
// space above what it holds at start (0: no limit), then answers requests
// read from r on w, one at a time, until r ends. An evaluation that runs
// out of its budget is answered and the worker exits, since the
// evaluation cannot be stopped. It returns the exit code.
func Serve(r io.Reader, w io.Writer, limit int64) int {
	if err := limitSelf(limit); err != nil {
		fmt.Fprintln(os.Stderr, "cueop worker:", err)
		return 2
	}
	in, out := bufio.NewReaderSize(r, 64<<10), bufio.NewWriterSize(w, 64<<10)
	s := &server{kinds: map[string]*template.Kind{}}
	if err := s.send(out, &response{Hello: &hello{PID: os.Getpid()}, CPU: selfCPU()}); err != nil {
		return 1
	}
	for {
		var req request
		if err := readMessage(in, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "cueop worker:", err)
			return 1
		}
		resp := s.handle(&req)
		resp.CPU = selfCPU()
		if err := s.send(out, resp); err != nil || resp.Abandoned {
			return 0
		}
	}
}

// server is a worker's state: the kinds it compiled, by root, name and
// revision.
type server struct {
	kinds map[string]*template.Kind
	// converters are the converters of the kinds, by name (convert.go).
	converters map[string]kindConverter
}

func (s *server) send(w *bufio.Writer, resp *response) error {
	if err := writeMessage(w, resp); err != nil {
		// A result too large to send is the evaluation's doing.
		resp = &response{Err: &wireError{Reason: wellknown.ReasonRenderBudget, Messages: []string{"render result: " + err.Error()}}}
		if err := writeMessage(w, resp); err != nil {
			return err
		}
	}
	return w.Flush()
}

func (s *server) handle(req *request) *response {
	switch req.Op {
	case opCompile:
		return s.compile(req)
	case opConvert:
		return s.convert(req) // convert.go
	case opCheck:
		return s.checkConversions(req) // convcheck.go
	case opRender, opReferences:
		k, err := s.kind(req)
		if errors.Is(err, errNeedFiles) {
			return &response{NeedFiles: true}
		}
		if err != nil {
			return errorResponse(err)
		}
		if req.Op == opRender {
			return renderResponse(render.RenderInputs(inputs(k, req), options(req.Options)))
		}
		return referencesResponse(render.References(k, &unstructured.Unstructured{Object: req.Parent}, options(req.Options)))
	}
	return errorResponse(fmt.Errorf("unknown operation %q", req.Op))
}

// kind returns the compiled kind of req, compiling it on first use from
// the directory, or from req.Files when the operator sent them. A
// revision on disk other than the one asked for (the directory changed
// since the operator loaded it) is errNeedFiles: the operator still serves
// that revision and sends its files.
func (s *server) kind(req *request) (*template.Kind, error) {
	key := req.Root + "\x00" + req.Kind + "\x00" + req.Revision
	if k := s.kinds[key]; k != nil {
		return k, nil
	}
	opts := template.LoadOptions{Budget: req.Options.Budget, Limits: req.Options.Limits}
	var k *template.Kind
	var err error
	if req.Files != nil {
		k, err = template.LoadKindFiles(req.Root, req.Kind, req.Files, opts)
	} else {
		k, err = template.LoadKind(req.Root, req.Kind, opts)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNeedFiles // the templates directory is gone: the revision's files compile
		}
	}
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, fmt.Errorf("package %s defines no %q", req.Kind, template.PathResource)
	}
	if k.Revision != req.Revision {
		if req.Files == nil {
			return nil, errNeedFiles
		}
		return nil, fmt.Errorf("kind %s: the worker compiled template revision %s from the files of %s", req.Kind, k.Revision, req.Revision)
	}
	s.keep(key, k)
	return k, nil
}

// errNeedFiles asks the operator for the files of the revision it renders.
var errNeedFiles = errors.New("template revision not on disk: send its files")

// keep keeps k, and no other revision of it.
func (s *server) keep(key string, k *template.Kind) {
	for old, o := range s.kinds {
		if o.Name == k.Name {
			delete(s.kinds, old)
		}
	}
	s.kinds[key] = k
}

// compile compiles one package as the operator's reload would, and
// answers its revision (none for a helper package) or its error. The kind
// is kept for the renders that follow.
func (s *server) compile(req *request) *response {
	k, err := template.LoadKind(req.Root, req.Kind, template.LoadOptions{Budget: req.Options.Budget, Limits: req.Options.Limits})
	if err != nil {
		return errorResponse(err)
	}
	if k == nil {
		return &response{}
	}
	s.keep(req.Root+"\x00"+req.Kind+"\x00"+k.Revision, k)
	return &response{Revision: k.Revision}
}

func inputs(k *template.Kind, req *request) render.Inputs {
	in := render.Inputs{Kind: k, Parent: &unstructured.Unstructured{Object: req.Parent}, Observed: unstructureds(req.Observed)}
	if req.Referenced != nil {
		in.Referenced = make(map[string]render.Referenced, len(req.Referenced))
		for id, r := range req.Referenced {
			objs := make([]*unstructured.Unstructured, len(r.Objects))
			for i, o := range r.Objects {
				objs[i] = &unstructured.Unstructured{Object: o}
			}
			in.Referenced[id] = render.Referenced{Objects: objs, List: r.List}
		}
	}
	return in
}

func options(o wireOptions) render.Options {
	opts := render.Options{MaxChildren: o.MaxChildren, Budget: o.Budget}
	if o.Allowed != "" {
		opts.AllowedKinds, _ = render.ParseKindSet(o.Allowed)
	}
	if o.Readable != "" {
		opts.ReadableKinds, _ = render.ParseKindSet(o.Readable)
	}
	if o.Namespaced != nil {
		opts.Scope = func(gk schema.GroupKind) (bool, bool) {
			namespaced, known := o.Namespaced[gk.String()]
			return namespaced, known
		}
	}
	return opts
}

func renderResponse(res *render.Result, err error) *response {
	if err != nil {
		return errorResponse(err)
	}
	if res.Status == nil {
		res.Status = map[string]any{} // as result gives it: the same packed and unpacked
	}
	if p, ok := render.Pack(res); ok {
		data, children, ready, conditions := p.Parts()
		out := &wirePacked{Data: data, Ready: ready.Ready, ReadyByDefault: ready.ByDefault, Conditions: conditions, Children: make([]wirePackedChild, len(children))}
		for i, c := range children {
			out.Children[i] = wirePackedChild{ID: c.ID, Policy: c.Policy, Wave: c.Wave, ReadyWhen: c.ReadyWhen}
		}
		return &response{Packed: out}
	}
	out := &wireResult{Status: res.Status, Ready: res.Ready, ReadyByDefault: res.ReadyByDefault, Immutable: res.Immutable, Conditions: res.Conditions}
	out.Children = make([]wireChild, len(res.Children))
	for i, c := range res.Children {
		out.Children[i] = wireChild{ID: c.ID, Object: c.Object.Object, Policy: c.Policy, Wave: c.Wave, ReadyWhen: c.ReadyWhen}
	}
	return &response{Result: out}
}

func referencesResponse(refs []render.Reference, err error) *response {
	if err != nil {
		return errorResponse(err)
	}
	out := make([]wireReference, len(refs))
	for i, r := range refs {
		out[i] = wireReference{ID: r.ID, Ref: r}
	}
	return &response{References: out}
}

// errorResponse tells err; an evaluation that ran out of its budget is
// still running, abandoned, so the worker must end after answering.
func errorResponse(err error) *response {
	var rerr *render.Error
	if errors.As(err, &rerr) {
		return &response{Err: &wireError{Reason: rerr.Reason, Messages: rerr.Messages}, Abandoned: rerr.Reason == wellknown.ReasonRenderBudget}
	}
	var tooLarge *convert.AnnotationTooLargeError
	if errors.As(err, &tooLarge) {
		we := &wireError{Messages: []string{err.Error()}, TooLarge: tooLarge}
		var partial *convert.IncompleteError
		if errors.As(err, &partial) && partial.Object != nil {
			we.Converted = partial.Object.Object
		}
		return &response{Err: we}
	}
	return &response{Err: &wireError{Messages: []string{err.Error()}}, Abandoned: isExceeded(err)}
}
