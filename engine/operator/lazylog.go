package operator

import (
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reconcileLogger is the LogConstructor of a kind's controller: the
// fields controller-runtime's default one gives each reconcile's logger
// (controller, object, namespace, name), kept by a lazySink.
func reconcileLogger(base logr.Logger, controller string) func(*reconcile.Request) logr.Logger {
	log := lazy(base).WithValues("controller", controller)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return log
		}
		return log.WithValues("object", klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
	}
}

// lazy is l, its WithValues kept until a line is written (lazySink); l
// itself when its sink cannot be told of lazySink's frame (the lines would
// name it as their caller).
func lazy(l logr.Logger) logr.Logger {
	cd, ok := l.GetSink().(logr.CallDepthLogSink)
	if !ok {
		return l
	}
	return logr.New(&lazySink{sink: cd.WithCallDepth(1)}).V(l.GetV())
}

// lazySink hands the key-value pairs of WithValues to the sink it wraps
// only when a line is written. controller-runtime gives every reconcile's
// logger the CR's key and a reconcile ID, which a zap logger encodes at
// once (an encoder cloned, the key rendered as JSON), for lines most
// reconciles never write.
type lazySink struct {
	sink logr.LogSink
	kv   []any
}

// Init does nothing: the wrapped sink was initialized by its own logger
// (and lazy gave it lazySink's frame), and initializing it again would
// change it for that logger too.
func (s *lazySink) Init(logr.RuntimeInfo) {}

func (s *lazySink) Enabled(level int) bool { return s.sink.Enabled(level) }

func (s *lazySink) Info(level int, msg string, kv ...any) {
	s.withValues().Info(level, msg, kv...)
}

func (s *lazySink) Error(err error, msg string, kv ...any) {
	s.withValues().Error(err, msg, kv...)
}

func (s *lazySink) WithValues(kv ...any) logr.LogSink {
	return &lazySink{sink: s.sink, kv: append(slices.Clip(s.kv), kv...)}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{sink: s.sink.WithName(name), kv: s.kv}
}

func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.sink.(logr.CallDepthLogSink); ok {
		return &lazySink{sink: cd.WithCallDepth(depth), kv: s.kv}
	}
	return s
}

// withValues is the wrapped sink with every pair kept.
func (s *lazySink) withValues() logr.LogSink {
	if len(s.kv) == 0 {
		return s.sink
	}
	return s.sink.WithValues(s.kv...)
}
