// Package useragent is the User-Agent of every request cueop sends to an
// API server: cueop/<version> (<os>/<arch>), so that an audit log tells
// cueop's requests (its own, each kind's identity's, dev's, diff's) from
// anyone else's.
package useragent

import (
	"runtime"

	"k8s.io/client-go/rest"
)

// Version is cueop's version; cmd/cueop sets it from its build's
// -ldflags "-X main.version=...".
var Version = "dev"

// String is cueop's User-Agent.
func String() string {
	return "cueop/" + Version + " (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

// Set gives cfg cueop's User-Agent unless it has one: a config copied from
// one cueop made keeps it (rest.CopyConfig copies it; controller-runtime's
// manager.GetConfig returns the config as given, without the User-Agent
// it adds to its own clients).
func Set(cfg *rest.Config) *rest.Config {
	if cfg.UserAgent == "" {
		cfg.UserAgent = String()
	}
	return cfg
}
