package webhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Lifetimes of the certificates cueop makes. A serving certificate is
// renewed once less than a third of its life is left (Rotator), a CA once
// less than RenewCABefore is.
const (
	CALifetime      = 10 * 365 * 24 * time.Hour
	ServingLifetime = 365 * 24 * time.Hour
	RenewCABefore   = 365 * 24 * time.Hour
)

// KeyPair is a certificate and its private key, PEM-encoded.
type KeyPair struct {
	Cert, Key []byte
}

// NewCA makes a self-signed CA valid from now for lifetime.
func NewCA(name string, now time.Time, lifetime time.Duration) (KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	return issue(tmpl, nil, now, lifetime)
}

// NewServing makes a serving certificate for hosts (DNS names or IP
// addresses) signed by ca, valid from now for lifetime.
func NewServing(ca KeyPair, hosts []string, now time.Time, lifetime time.Duration) (KeyPair, error) {
	if len(hosts) == 0 {
		return KeyPair{}, errors.New("serving certificate: no host")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(tmpl, &ca, now, lifetime)
}

// issue signs tmpl with a new key, by parent (self-signed when nil).
func issue(tmpl *x509.Certificate, parent *KeyPair, now time.Time, lifetime time.Duration) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("certificate %s: key: %w", tmpl.Subject.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return KeyPair{}, fmt.Errorf("certificate %s: serial: %w", tmpl.Subject.CommonName, err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.Add(lifetime)
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		pc, err := tls.X509KeyPair(parent.Cert, parent.Key)
		if err != nil {
			return KeyPair{}, fmt.Errorf("certificate %s: ca: %w", tmpl.Subject.CommonName, err)
		}
		signer, signerKey = pc.Leaf, pc.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("certificate %s: key: %w", tmpl.Subject.CommonName, err)
	}
	return KeyPair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// NotAfter is when the (first) certificate of pemCert expires.
func NotAfter(pemCert []byte) (time.Time, error) {
	block, _ := pem.Decode(pemCert)
	if block == nil {
		return time.Time{}, errors.New("certificate: no PEM block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("certificate: %w", err)
	}
	return c.NotAfter, nil
}

// Certs are the certificates the endpoint serves with, swapped in place
// on rotation: the TLS server reads the serving pair at each handshake and
// CRDs are given CABundle.
type Certs struct {
	serving  atomic.Pointer[tls.Certificate]
	caBundle atomic.Pointer[[]byte]

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each Set
	// wanted is closed by the first WaitBundle (Wanted).
	wanted     chan struct{}
	wantedOnce sync.Once
}

// Wanted is closed once a CA bundle was waited for (a CRD pointed at the
// endpoint): the certificates are needed from then on.
func (c *Certs) Wanted() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wanted == nil {
		c.wanted = make(chan struct{})
	}
	return c.wanted
}

// Set makes serving the pair served and bundle the CAs that verify it.
func (c *Certs) Set(serving KeyPair, bundle []byte) error {
	pair, err := tls.X509KeyPair(serving.Cert, serving.Key)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	old := c.CABundle()
	c.serving.Store(&pair)
	c.caBundle.Store(&bundle)
	if !bytes.Equal(old, bundle) {
		c.mu.Lock()
		if c.changed != nil {
			close(c.changed)
		}
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
	return nil
}

// BundleChanged is closed when the CA bundle next changes (the first Set
// included).
func (c *Certs) BundleChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// WaitBundle waits until a CA bundle is set.
func (c *Certs) WaitBundle(ctx context.Context) ([]byte, error) {
	c.Wanted()
	c.wantedOnce.Do(func() { close(c.wanted) })
	for {
		ch := c.BundleChanged()
		if b := c.CABundle(); len(b) > 0 {
			return b, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("conversion webhook: no CA bundle yet: %w", ctx.Err())
		}
	}
}

// CABundle are the PEM CAs that verify the served certificate.
func (c *Certs) CABundle() []byte {
	if b := c.caBundle.Load(); b != nil {
		return *b
	}
	return nil
}

// GetCertificate is tls.Config's GetCertificate.
func (c *Certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if p := c.serving.Load(); p != nil {
		return p, nil
	}
	return nil, errors.New("conversion webhook: no serving certificate yet")
}

// LocalCerts are a fresh CA and a serving certificate for 127.0.0.1 and
// localhost, for `cueop dev` and tests.
func LocalCerts() (*Certs, error) {
	now := time.Now()
	ca, err := NewCA("cueop-dev-ca", now, CALifetime)
	if err != nil {
		return nil, err
	}
	serving, err := NewServing(ca, []string{"127.0.0.1", "localhost"}, now, ServingLifetime)
	if err != nil {
		return nil, err
	}
	c := &Certs{}
	return c, c.Set(serving, ca.Cert)
}
