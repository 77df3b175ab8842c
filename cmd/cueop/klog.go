package main

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// setKlogLogger sends client-go's log lines (klog: leader election, the
// reflectors' warnings) to log. klog's own logger is a process global
// that client-go's goroutines read unguarded, some of them outliving the
// run that started them (tests run dev and run more than once in one
// process): it is set once, before any goroutine starts (init), to a
// sink that forwards to the logger of the latest run, swapped
// atomically; until a run sets one, to standard error, as klog writes.
func setKlogLogger(log logr.Logger) {
	klogTarget.Store(&log)
}

var klogTarget atomic.Pointer[logr.Logger]

// klogStderr is klog's logger until a run sets one: text on standard
// error.
var klogStderr = funcr.New(func(prefix, args string) {
	if prefix != "" {
		args = prefix + ": " + args
	}
	fmt.Fprintln(os.Stderr, args)
}, funcr.Options{})

func init() {
	setKlogLogger(klogStderr)
	klog.SetLogger(logr.New(klogSink{}))
}

// klogSink forwards to klogTarget's sink, with the names and values
// given to it kept.
type klogSink struct {
	names  []string
	values []any
	info   logr.RuntimeInfo
}

func (s klogSink) target() (logr.Logger, bool) {
	l := klogTarget.Load()
	if l == nil || l.GetSink() == nil {
		return logr.Logger{}, false
	}
	log := *l
	for _, n := range s.names {
		log = log.WithName(n)
	}
	if len(s.values) > 0 {
		log = log.WithValues(s.values...)
	}
	return log, true
}

func (s klogSink) Init(info logr.RuntimeInfo) { s.info = info }

func (s klogSink) Enabled(level int) bool {
	log, ok := s.target()
	return ok && log.GetSink().Enabled(level)
}

func (s klogSink) Info(level int, msg string, kv ...any) {
	if log, ok := s.target(); ok {
		log.GetSink().Info(level, msg, kv...)
	}
}

func (s klogSink) Error(err error, msg string, kv ...any) {
	if log, ok := s.target(); ok {
		log.GetSink().Error(err, msg, kv...)
	}
}

func (s klogSink) WithValues(kv ...any) logr.LogSink {
	s.values = append(append([]any(nil), s.values...), kv...)
	return s
}

func (s klogSink) WithName(name string) logr.LogSink {
	s.names = append(append([]string(nil), s.names...), name)
	return s
}
