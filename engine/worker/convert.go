package worker

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// Converter converts objects of one kind between its served versions in
// the pool's workers, leniently (engine/convert's Converter.Lenient: what
// the conversion webhook serves), each conversion within its budget: the
// worker compiles the kind's revision once, its conversions included, and
// a conversion that overruns, runs out of its budget or crashes its worker
// ends that worker and fails that object alone. Conversions are shared
// among the tenants (the object's namespace) as renders are, in the same
// turns. A conversion that needs no evaluation (the object at the version
// asked for, or its spec's conversion kept from an earlier one: a status
// or metadata write) is answered in the operator from the memo of the
// conversions the workers evaluated. It is safe for concurrent use.
type Converter struct {
	pool    *Pool
	kind    *template.Kind
	budget  budget.Budget
	memo    *convert.Converter // memoOnly use: never evaluates here
	refused *refusals          // refused.go
}

// Converter returns the converter of k's conversions, each within b; nil
// for a kind with one version.
func (p *Pool) Converter(k *template.Kind, b budget.Budget) (*Converter, error) {
	c, err := convert.New(k)
	if err != nil || c == nil {
		return nil, err
	}
	if k.Dir == "" {
		return nil, fmt.Errorf("kind %s: not loaded from a templates directory: cannot convert in a worker", k.Name)
	}
	return &Converter{pool: p, kind: k, budget: b, memo: c.WithBudget(b).Lenient(), refused: &refusals{}}, nil
}

// Convert converts obj to toVersion (webhook.Converter).
func (c *Converter) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	return c.ConvertContext(context.Background(), obj, toVersion)
}

// ConvertContext converts obj to toVersion; it stops (and ends the
// worker converting) when ctx ends.
func (c *Converter) ConvertContext(ctx context.Context, obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	if out, ok, err := c.memo.Memoized(obj, toVersion); ok {
		return out, err
	}
	key := refusalKey(obj, toVersion)
	if err := c.refused.get(key); err != nil {
		return nil, err
	}
	req := &request{Op: opConvert, Object: obj.Object, ToVersion: toVersion, Options: wireOptions{Budget: c.budget}}
	if err := c.pool.setKind(req, c.kind); err != nil {
		return nil, err
	}
	resp, err := c.pool.evaluate(context.WithValue(ctx, waitTurn{}, true), obj.GetNamespace(), c.kind, req, c.budget)
	var ended *conversionEnded
	if errors.As(err, &ended) {
		err = fmt.Errorf("%s: conversion from %s to %s: %w", subject(obj), obj.GroupVersionKind().Version, toVersion, err)
	}
	if err != nil {
		if ended != nil || isExceeded(err) {
			c.refused.put(key, err)
		}
		return nil, err
	}
	c.memo.Remember(resp.Memo)
	return &unstructured.Unstructured{Object: resp.Converted}, nil
}

// waitTurn, set in a request's context, makes it wait its turn when its
// tenant's share of the workers is held by slow evaluations, instead of
// being refused (Busy): a conversion is the answer to a read that nobody
// retries, and it ends when its caller leaves.
type waitTurn struct{}

func waitsTurn(ctx context.Context) bool { return ctx.Value(waitTurn{}) != nil }

// conversionEnded is a conversion that ended its worker.
type conversionEnded struct{ msg string }

func (e *conversionEnded) Error() string { return e.msg }

// conversionOverBudget is the error of a conversion of k whose worker
// ended: what it used, against what.
func conversionOverBudget(k *template.Kind, u usage, b budget.Budget, memory int64) error {
	return &conversionEnded{fmt.Sprintf("kind %s: %s (%s)", k.Name, describe("conversion", u, b, memory), render.BudgetRevision(k))}
}

// subject names obj: Kind ns/name, or Kind name for a cluster-scoped one.
func subject(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// convert converts req.Object in the worker with the converter of its
// kind's revision, made once per revision. A conversion that runs out of
// its budget is answered as abandoned: the worker ends.
func (s *server) convert(req *request) *response {
	k, err := s.kind(req)
	if errors.Is(err, errNeedFiles) {
		return &response{NeedFiles: true}
	}
	if err != nil {
		return errorResponse(err)
	}
	kc := s.converters[k.Name]
	if kc.kind != k {
		kc = kindConverter{kind: k}
		if kc.conv, err = convert.New(k); err != nil {
			return errorResponse(err)
		}
		if kc.conv == nil {
			return errorResponse(fmt.Errorf("kind %s serves one version: nothing to convert", k.Name))
		}
		if s.converters == nil {
			s.converters = map[string]kindConverter{}
		}
		s.converters[k.Name] = kc
	}
	out, memo, err := kc.conv.WithBudget(req.Options.Budget).Lenient().Evaluate(&unstructured.Unstructured{Object: req.Object}, req.ToVersion)
	if err != nil {
		return errorResponse(err)
	}
	return &response{Converted: out.Object, Memo: memo}
}

// kindConverter is a worker's converter of one compiled kind.
type kindConverter struct {
	kind *template.Kind
	conv *convert.Converter
}
