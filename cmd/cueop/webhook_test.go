package main

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestWebhookBindsLoopbackByDefault: `cueop run` outside a cluster serves
// the conversion webhook on 127.0.0.1 unless told otherwise (config/ gives
// it the pod's IP), not on every interface.
func TestWebhookBindsLoopbackByDefault(t *testing.T) {
	f := &webhookFlags{}
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(fl)
	if err := fl.Parse(nil); err != nil {
		t.Fatal(err)
	}
	c, err := f.conversion()
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "127.0.0.1" {
		t.Errorf("webhook bind address %q by default, want 127.0.0.1", c.Host)
	}
}
