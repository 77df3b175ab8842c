package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template"
)

// checkTenant is the share of the workers the conversion checks of a new
// revision take turns in: not a namespace (a namespace name holds no
// colon), so no tenant's renders or conversions wait for them.
const checkTenant = "cueop:conversion-check"

// A revision's conversion check gives each round trip the budget of a
// conversion, but at least minCheckTime (a spec at the schema's bounds
// is no conversion a tenant asks for each read), and maxCheckTime of CPU
// to the whole check.
const (
	minCheckTime = 5 * time.Second
	maxCheckTime = time.Minute
)

// CheckConversions runs `cueop vet`'s round trips of k's conversions
// (convert.Converter.CheckSpecs) over specs in a worker: a conversion
// that loses or invents a field is refused with vet's message, and one
// that runs out of its budget (b for each round trip, minCheckTime at
// least, maxCheckTime in all) or crashes its worker ends that worker
// alone and refuses the revision, naming what it used. Specs are untrusted (the
// stored CRs' among them): none is converted in this process.
func (p *Pool) CheckConversions(ctx context.Context, k *template.Kind, specs []convert.Spec, b budget.Budget) error {
	if len(specs) == 0 {
		return nil
	}
	per := b.WithDefaults()
	per.Time = max(per.Time, minCheckTime)
	req := &request{Op: opCheck, Specs: specs, Options: wireOptions{Budget: per}}
	if err := p.setKind(req, k); err != nil {
		return err
	}
	total := per
	total.Time = min(per.Time*time.Duration(len(specs)), maxCheckTime)
	_, err := p.evaluate(context.WithValue(ctx, waitTurn{}, true), checkTenant, k, req, total)
	var ended *conversionEnded
	if errors.As(err, &ended) {
		return fmt.Errorf("kind %s: conversion check of %d specs: %w", k.Name, len(specs), err)
	}
	return err
}

// checkConversions runs CheckSpecs on req.Specs with the converter of
// its kind's revision.
func (s *server) checkConversions(req *request) *response {
	k, err := s.kind(req)
	if errors.Is(err, errNeedFiles) {
		return &response{NeedFiles: true}
	}
	if err != nil {
		return errorResponse(err)
	}
	conv, err := convert.New(k)
	if err != nil {
		return errorResponse(err)
	}
	if conv == nil {
		return &response{}
	}
	if err := conv.WithBudget(req.Options.Budget).CheckSpecs(req.Specs); err != nil {
		return errorResponse(err)
	}
	return &response{}
}
