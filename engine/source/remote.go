package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"cuelabs.dev/go/oci/ociregistry"
	"cuelang.org/go/mod/modconfig"
	"cuelang.org/go/mod/modregistry"
	"cuelang.org/go/mod/module"
	"golang.org/x/mod/semver"
)

// maxManifest bounds a module's manifest: CUE's hold two layer descriptors
// and a few annotations.
const maxManifest = 64 << 10

// remote is one registry, through CUE's module registry client.
type remote struct {
	registry string
	resolver *modconfig.Resolver
	client   *modregistry.Client
}

// newRemote makes the client of registry. Credentials are auth, a docker
// config.json's content, if any: no other configuration (the user's
// ~/.docker, CUE's logins) is read. Every answer is bounded to max bytes.
func newRemote(registry string, auth []byte, cacheDir string, max int64) (*remote, error) {
	env := []string{
		"DOCKER_CONFIG=" + filepath.Join(cacheDir, "no-docker-config"),
		"CUE_CONFIG_DIR=" + filepath.Join(cacheDir, "no-cue-config"),
	}
	if auth != nil {
		env = append(env, "DOCKER_AUTH_CONFIG="+string(auth))
	}
	res, err := modconfig.NewResolver(&modconfig.Config{CUERegistry: registry, Env: env, ClientType: "cueop",
		Transport: boundedTransport{next: http.DefaultTransport.(*http.Transport).Clone(), max: max}})
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", registry, err)
	}
	return &remote{registry: registry, resolver: res, client: modregistry.NewClientWithResolver(res)}, nil
}

// latest is the newest version of module starting with prefix (v1,
// v1.2): the newest release, or the newest pre-release when there is none.
func (r *remote) latest(ctx context.Context, mod, prefix string) (string, error) {
	vs, err := r.client.ModuleVersions(ctx, mod+"@"+semver.Major(prefix))
	if err != nil {
		return "", fmt.Errorf("module %s@%s: versions: %w", mod, prefix, err)
	}
	best := ""
	for _, v := range vs {
		if v != prefix && !startsWith(v, prefix) {
			continue
		}
		if best == "" || better(v, best) {
			best = v
		}
	}
	if best == "" {
		return "", fmt.Errorf("module %s@%s: no version in registry %s", mod, prefix, r.registry)
	}
	return best, nil
}

func startsWith(v, prefix string) bool {
	return len(v) > len(prefix) && v[:len(prefix)] == prefix && v[len(prefix)] == '.'
}

// better prefers a release to a pre-release, then the higher version.
func better(v, than string) bool {
	if (semver.Prerelease(v) == "") != (semver.Prerelease(than) == "") {
		return semver.Prerelease(v) == ""
	}
	return semver.Compare(v, than) > 0
}

// fetched is a module version's manifest, read within bounds.
type fetched struct {
	mv       module.Version
	digest   string
	mod      *modregistry.Module
	manifest ociregistry.Manifest
}

// manifest reads mv's manifest by its tag, or by digest when given.
func (r *remote) manifest(ctx context.Context, mv module.Version, digest string) (*fetched, error) {
	loc, err := r.resolver.ResolveToRegistry(mv.BasePath(), mv.Version())
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", describe(mv, digest), err)
	}
	var rd ociregistry.BlobReader
	if digest != "" {
		rd, err = loc.Registry.GetManifest(ctx, loc.Repository, ociregistry.Digest(digest))
	} else {
		rd, err = loc.Registry.GetTag(ctx, loc.Repository, loc.Tag)
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: registry %s: %w", describe(mv, digest), r.registry, err)
	}
	defer rd.Close()
	data, err := readBounded(rd, maxManifest, "manifest")
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", describe(mv, digest), err)
	}
	m, err := r.client.GetModuleWithManifest(mv, data, rd.Descriptor().MediaType)
	if err != nil {
		return nil, err
	}
	f := &fetched{mv: mv, digest: string(m.ManifestDigest()), mod: m}
	if digest != "" && f.digest != digest {
		return nil, fmt.Errorf("module %s: the registry answered content of digest %s for the pinned digest: refused", describe(mv, digest), f.digest)
	}
	if err := json.Unmarshal(data, &f.manifest); err != nil {
		return nil, fmt.Errorf("module %s: manifest: %w", describe(mv, f.digest), err)
	}
	return f, nil
}

// errTooLarge is the refusal of an archive its manifest says is over the
// limits.
var errTooLarge = errors.New("refused before download")

// archive downloads the module's zip, refused before any read when the
// manifest states more than max bytes, and checked against its digest.
func (f *fetched) archive(ctx context.Context, max int64) ([]byte, error) {
	layer := f.manifest.Layers[0]
	if layer.Size > max {
		return nil, fmt.Errorf("module %s: its archive holds %d bytes, more than the %d a module may (four times --template-max-total-size): %w", describe(f.mv, f.digest), layer.Size, max, errTooLarge)
	}
	rc, err := f.mod.GetZip(ctx)
	if err != nil {
		return nil, fmt.Errorf("module %s: archive: %w", describe(f.mv, f.digest), err)
	}
	defer rc.Close()
	data, err := readBounded(rc, layer.Size, "archive")
	if err == nil && int64(len(data)) != layer.Size {
		err = fmt.Errorf("archive: %d bytes, the manifest says %d", len(data), layer.Size)
	}
	if err == nil && layer.Digest.Algorithm().FromBytes(data) != layer.Digest {
		err = fmt.Errorf("archive: its content does not match digest %s", layer.Digest)
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", describe(f.mv, f.digest), err)
	}
	return data, nil
}

// readBounded reads r, refusing more than max bytes.
func readBounded(r io.Reader, max int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes: refused", what, max)
	}
	return data, nil
}

// describe names a module version (and its digest) in an error.
func describe(mv module.Version, digest string) string {
	d := mv.BasePath() + "@" + mv.Version()
	if digest != "" {
		d += " (" + digest + ")"
	}
	return d
}
