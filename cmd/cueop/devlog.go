package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// devLogFile is the name of the file, beside the kubeconfig `cueop dev`
// writes, that holds the operator's JSON logs.
const devLogFile = "operator.log"

// devLogger is the logger of `cueop dev`. Unless --zap-encoder was given,
// the operator's structured logs (JSON, at --zap-log-level) go to a file and
// only its warnings and errors reach out, each on one human-readable line,
// between the status lines: its errors, and the lines that carry a
// consoleKeys field (a template warning, an error resolved). With --zap-encoder, the logs go to standard
// error as `cueop run` writes them, and path is empty. close closes the file.
func devLogger(zapOpts *zap.Options, encoderSet bool, dir string, out io.Writer) (log logr.Logger, path string, close func() error, err error) {
	if encoderSet {
		return zap.New(zap.UseFlagOptions(zapOpts)), "", func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return logr.Logger{}, "", nil, err
	}
	path = filepath.Join(dir, devLogFile)
	file, err := os.Create(path)
	if err != nil {
		return logr.Logger{}, "", nil, fmt.Errorf("operator log: %w", err)
	}
	console := oneLineCore{zapcore.NewCore(zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
		TimeKey: "time", LevelKey: "level", NameKey: "logger", MessageKey: "msg",
		EncodeTime:       zapcore.TimeEncoderOfLayout("15:04:05"),
		EncodeLevel:      zapcore.CapitalLevelEncoder,
		EncodeDuration:   zapcore.StringDurationEncoder,
		ConsoleSeparator: "  ",
	}), zapcore.AddSync(out), zapcore.InfoLevel)}
	opts := *zapOpts
	opts.DestWriter = file
	opts.ZapOpts = slices.Clone(zapOpts.ZapOpts)
	log = zap.New(zap.UseFlagOptions(&opts), zap.RawZapOpts(uberzap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, console)
	})))
	return log, path, file.Close, nil
}

// oneLineCore writes each entry on one line: the message's line breaks are
// replaced and the stack trace is left out (the log file has it). The
// console encoder writes the fields as JSON, their line breaks escaped.
type oneLineCore struct{ zapcore.Core }

func (c oneLineCore) With(fields []zapcore.Field) zapcore.Core {
	return oneLineCore{c.Core.With(fields)}
}

func (c oneLineCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// consoleKeys are the fields of an info line that the console shows: what
// the operator warns of without failing (a template that reads a field its
// child's kind lacks) and the end of an error it logged (a refused kind
// served again).
var consoleKeys = []string{"warning", "resolved"}

func (c oneLineCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Level < zapcore.WarnLevel && !slices.ContainsFunc(fields, func(f zapcore.Field) bool { return slices.Contains(consoleKeys, f.Key) }) {
		return nil
	}
	if slices.ContainsFunc(fields, canceled) {
		return nil // a request cut off by the shutdown: nothing to act on (the file has it)
	}
	e.Message = oneLine(e.Message)
	e.Stack = ""
	return c.Core.Write(e, fields)
}

// canceled tells whether f is the error of a request whose context ended
// (the process shuts down).
func canceled(f zapcore.Field) bool {
	err, ok := f.Interface.(error)
	return ok && f.Type == zapcore.ErrorType && errors.Is(err, context.Canceled)
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
