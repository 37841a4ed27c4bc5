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
	c, err := httpsClientFor(caFile)
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 10 * time.Second
	return c
}

// httpsClientFor is an HTTP client trusting exactly the CA in caFile.
func httpsClientFor(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}
