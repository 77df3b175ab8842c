package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of the certificate Secret. tls.crt and tls.key follow the
// kubernetes.io/tls layout (a cert-manager Certificate writes the same
// keys, ca.crt included); ca.key is kept by cueop's own rotation only.
const (
	keyCA      = "ca.crt"
	keyCAKey   = "ca.key"
	keyBundle  = "ca-bundle.crt"
	keyCert    = corev1.TLSCertKey
	keyCertKey = corev1.TLSPrivateKeyKey
)

// Rotator keeps the serving certificate of the endpoint in a Secret: it
// makes a CA and a serving certificate for the Service's DNS names when
// the Secret is missing, renews the serving certificate once less than a
// third of its life is left and the CA once less than RenewCABefore is
// (the CA bundle then holds the new and the old CA, so that replicas still
// serving the old certificate are trusted), and loads what the Secret
// holds into Certs. Every replica runs one; writes are optimistic (a
// replica that loses a race reads the winner's). It is a manager runnable
// that needs no leader.
type Rotator struct {
	Client    client.Client
	Reader    client.Reader // uncached reads
	Namespace string
	Name      string
	// Hosts are the DNS names of the serving certificate.
	Hosts []string
	Certs *Certs
	// Interval between checks; an hour when zero.
	Interval time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// External: another issuer (cert-manager) keeps the Secret; the
	// Rotator only loads it, and waits while it is missing.
	External bool
	// Needed, when set, is closed once the certificate is needed (a kind
	// converts, a CRD is pointed at the endpoint: Registry.Converting,
	// Certs.Wanted): until then the Rotator sends no request. Nil: at
	// once.
	Needed <-chan struct{}
	Log    logr.Logger
}

// ServiceHosts are the DNS names of Service name in namespace.
func ServiceHosts(namespace, name string) []string {
	return []string{name + "." + namespace + ".svc", name + "." + namespace + ".svc.cluster.local", name + "." + namespace, name}
}

// NeedLeaderElection: every replica serves conversions.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start syncs once Needed, then every Interval, until ctx is done. A sync
// that fails is retried with backoff (retryMin, doubling to retryMax or
// Interval); each distinct error is logged once, and its end too.
func (r *Rotator) Start(ctx context.Context) error {
	interval := r.Interval
	if interval == 0 {
		interval = time.Hour
	}
	if r.Needed != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-r.Needed:
		}
	}
	retry, failed := time.Duration(0), ""
	for {
		wait := interval
		switch err := r.Sync(ctx); {
		case err == nil && failed != "":
			r.Log.Info("conversion webhook certificate: in place again", "secret", r.Namespace+"/"+r.Name)
			retry, failed = 0, ""
		case err == nil:
			retry = 0
		case ctx.Err() != nil:
			return nil
		default:
			retry = min(max(2*retry, retryMin), retryMax, interval)
			wait = retry
			if msg := err.Error(); msg != failed {
				r.Log.Error(err, "conversion webhook certificate: retrying with backoff, logged again only if the error changes", "retryIn", retry.String())
				failed = msg
			} else {
				r.Log.V(1).Info("conversion webhook certificate: still failing", "error", msg, "retryIn", retry.String())
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// The backoff of a failed sync.
const (
	retryMin = time.Second
	retryMax = 5 * time.Minute
)

// Sync makes or renews what the Secret holds as needed and loads it.
func (r *Rotator) Sync(ctx context.Context) error {
	s := &corev1.Secret{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("secret %s/%s: %w", r.Namespace, r.Name, err)
	}
	missing := apierrors.IsNotFound(err)
	if missing && r.External {
		return fmt.Errorf("secret %s/%s: not found (its issuer has not written it yet)", r.Namespace, r.Name)
	}
	if r.External {
		return r.Certs.Set(KeyPair{Cert: s.Data[keyCert], Key: s.Data[keyCertKey]}, bundle(s))
	}
	if missing {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}, Type: corev1.SecretTypeTLS}
	}
	changed, err := r.renew(s)
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", r.Namespace, r.Name, err)
	}
	if changed {
		err = r.write(ctx, s, missing)
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			return r.Sync(ctx) // another replica wrote first: take its
		}
		if err != nil {
			return fmt.Errorf("secret %s/%s: %w", r.Namespace, r.Name, namespaceMissing(err, r.Namespace))
		}
		r.Log.Info("conversion webhook certificate renewed", "secret", r.Namespace+"/"+r.Name)
	}
	return r.Certs.Set(KeyPair{Cert: s.Data[keyCert], Key: s.Data[keyCertKey]}, bundle(s))
}

// namespaceMissing says so when err is the API server's refusal to write
// into namespace because it does not exist.
func namespaceMissing(err error, namespace string) error {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return err
	}
	if d := status.Status().Details; d == nil || d.Kind != "namespaces" {
		return err
	}
	return fmt.Errorf("namespace %s does not exist: the conversion webhook's Service and certificate Secret live there (create it, as config/ does, or point cueop at another): %w", namespace, err)
}

func (r *Rotator) write(ctx context.Context, s *corev1.Secret, create bool) error {
	if create {
		return r.Client.Create(ctx, s)
	}
	return r.Client.Update(ctx, s)
}

// renew replaces in s what is missing or due for renewal.
func (r *Rotator) renew(s *corev1.Secret) (bool, error) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	caDue := due(s.Data[keyCA], now, RenewCABefore) || len(s.Data[keyCAKey]) == 0
	if !caDue && !due(s.Data[keyCert], now, ServingLifetime/3) {
		return false, nil
	}
	if caDue {
		ca, err := NewCA("cueop-webhook-ca", now, CALifetime)
		if err != nil {
			return false, err
		}
		old := s.Data[keyCA]
		s.Data[keyCA], s.Data[keyCAKey] = ca.Cert, ca.Key
		s.Data[keyBundle] = append(append([]byte{}, ca.Cert...), old...) // the old CA stays trusted until its certificates are gone
	}
	serving, err := NewServing(KeyPair{Cert: s.Data[keyCA], Key: s.Data[keyCAKey]}, r.Hosts, now, ServingLifetime)
	if err != nil {
		return false, err
	}
	s.Data[keyCert], s.Data[keyCertKey] = serving.Cert, serving.Key
	return true, nil
}

// due tells whether cert is missing, unreadable or expires within d.
func due(cert []byte, now time.Time, d time.Duration) bool {
	if len(cert) == 0 {
		return true
	}
	notAfter, err := NotAfter(cert)
	return err != nil || notAfter.Sub(now) < d
}

// bundle is the CA bundle of s: ca-bundle.crt, else ca.crt.
func bundle(s *corev1.Secret) []byte {
	if b := bytes.TrimSpace(s.Data[keyBundle]); len(b) > 0 {
		return s.Data[keyBundle]
	}
	return s.Data[keyCA]
}
