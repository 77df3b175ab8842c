package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// VersionKey names the cache directory of the binaries built by hack/k8s/build.sh
// from the versions pinned in hack/k8s/*/go.mod. A test checks both agree.
const VersionKey = "kube-v1.37.2_etcd-v3.6.16_kwok-v0.8.0"

// BinDirEnv is the environment variable that points Start at the binaries.
const BinDirEnv = "CUEOP_K8S_BIN_DIR"

// DefaultBinDir returns where hack/k8s/build.sh puts the binaries:
// ${CUEOP_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cueop/k8s}/<VersionKey>/bin.
func DefaultBinDir() string {
	cache := os.Getenv("CUEOP_K8S_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(os.Getenv("HOME"), ".cache")
		}
		cache = filepath.Join(base, "cueop", "k8s")
	}
	return filepath.Join(cache, VersionKey, "bin")
}

// binDir resolves the binary directory and tells where the choice came from.
func binDir(opts Options) (dir, from string) {
	switch {
	case opts.BinDir != "":
		return opts.BinDir, "Options.BinDir"
	case os.Getenv(BinDirEnv) != "":
		return os.Getenv(BinDirEnv), "$" + BinDirEnv
	default:
		return DefaultBinDir(), "the default cache directory"
	}
}

// findBinaries returns the path of each component's binary, or an error naming
// every missing one and how to build them.
func findBinaries(opts Options) (map[string]string, error) {
	dir, from := binDir(opts)
	paths := map[string]string{}
	var missing []error
	for _, name := range opts.components() {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
			err = errors.New("not an executable file")
		}
		if err != nil {
			missing = append(missing, fmt.Errorf("%s: %w", name, err))
			continue
		}
		paths[name] = p
	}
	if missing != nil {
		return nil, fmt.Errorf("control plane binaries missing in %s (from %s); "+
			"run `make k8s-bins` (hack/k8s/build.sh) to build them: %w",
			dir, from, errors.Join(missing...))
	}
	return paths, nil
}
