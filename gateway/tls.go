package gateway

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// TLSFromFiles is a TLS configuration serving the certificate and key in
// the PEM files certFile and keyFile, read again when either changes (a
// renewed certificate, e.g. cert-manager's Secret, applies to the next
// handshake without a restart).
func TLSFromFiles(certFile, keyFile string) (*tls.Config, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.get(nil); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get}, nil
}

// certReloader holds the certificate last read.
type certReloader struct {
	certFile, keyFile string
	// mu guards cert and the modification times it was read at.
	mu              sync.Mutex
	cert            *tls.Certificate
	certMod, keyMod time.Time
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cm, err1 := modTime(r.certFile)
	km, err2 := modTime(r.keyFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && (err1 != nil || err2 != nil || (cm.Equal(r.certMod) && km.Equal(r.keyMod))) {
		return r.cert, nil // unchanged, or mid-rotation: keep the last good one
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert != nil {
			return r.cert, nil
		}
		return nil, fmt.Errorf("cannot load the gateway's TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.certMod, r.keyMod = &cert, cm, km
	return r.cert, nil
}

func modTime(path string) (time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}
