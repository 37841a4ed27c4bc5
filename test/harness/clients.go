package harness

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
)

// NewDynamicFor is a dynamic client acting as the named token user.
func NewDynamicFor(t testing.TB, k *Kube, user string) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(k.ConfigFor(user))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// HTTPSClient trusts exactly the CA in caFile.
func HTTPSClient(t testing.TB, caFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
