package sourcetest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"cuelabs.dev/go/oci/ociregistry"
	"cuelabs.dev/go/oci/ociregistry/ociclient"
	"github.com/opencontainers/go-digest"
)

// Middleware stands between the registry and its clients: it answers a
// request itself or passes it to next, as a hostile registry would.
type Middleware func(w http.ResponseWriter, req *http.Request, next http.Handler)

func (r *Registry) intercepting(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if mw := r.mw.Load(); mw != nil {
			(*mw)(w, req, next)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// Intercept puts mw before the registry; nil takes it away.
func (r *Registry) Intercept(mw Middleware) {
	if mw == nil {
		r.mw.Store(nil)
		return
	}
	r.mw.Store(&mw)
}

// Hang answers nothing until the client gives up; each request hanging is
// sent on hanging, when not nil, and not waited on.
func Hang(hanging chan<- string) Middleware {
	return func(_ http.ResponseWriter, req *http.Request, _ http.Handler) {
		if hanging != nil {
			select {
			case hanging <- req.URL.Path:
			default:
			}
		}
		<-req.Context().Done()
	}
}

// Trickle answers 200 and then one byte every interval until the client
// gives up.
func Trickle(every time.Duration) Middleware {
	return func(w http.ResponseWriter, req *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.WriteHeader(http.StatusOK)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-req.Context().Done():
				return
			case <-t.C:
				if _, err := w.Write([]byte(" ")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}
}

// PublishZip publishes archive, as it is, as module mod (with its major
// version suffix, repository base) at version, with moduleFile as its
// module file blob: none of the checks `cue mod publish` makes, as a
// hostile publisher would. It returns the manifest digest.
func (r *Registry) PublishZip(t testing.TB, repo, version string, archive []byte, moduleFile string) string {
	t.Helper()
	ctx := context.Background()
	oc, err := ociclient.New(r.Host(), &ociclient.Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	push := func(mediaType string, data []byte) ociregistry.Descriptor {
		d := ociregistry.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
		if _, err := oc.PushBlob(ctx, repo, d, bytes.NewReader(data)); err != nil {
			t.Fatalf("publish %s@%s: %v", repo, version, err)
		}
		return d
	}
	m := ociregistry.Manifest{
		MediaType: "application/vnd.oci.image.manifest.v1+json",
		Config:    push("application/vnd.cue.module.v1+json", []byte("{}")),
		Layers: []ociregistry.Descriptor{
			push("application/zip", archive),
			push("application/vnd.cue.modulefile.v1", []byte(moduleFile)),
		},
	}
	m.SchemaVersion = 2
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := oc.PushManifest(ctx, repo, version, data, m.MediaType)
	if err != nil {
		t.Fatalf("publish %s@%s: %v", repo, version, err)
	}
	return string(d.Digest)
}
