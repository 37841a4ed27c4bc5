package auth

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The operator's database Secret (agentserviceconfig_controller.go): its name
// and keys. The postgres container and assisted-service read these.
const (
	PostgresSecretName = "postgres"
	KeyDBHost          = "db.host"
	KeyDBName          = "db.name"
	KeyDBUser          = "db.user"
	KeyDBPassword      = "db.password"
	KeyDBPort          = "db.port"
)

// AnnotationCreatedBy marks the Secrets this package creates.
const AnnotationCreatedBy = "kubectl-assisted.io/created-by"

// PostgresCredentials are the fields of the postgres Secret. Printing them
// never shows the password.
type PostgresCredentials struct {
	Host, Port, Name, User, Password string
}

// DefaultPostgresCredentials are the operator's defaults with a fresh random
// password (the operator generates one only for a Secret it creates itself).
func DefaultPostgresCredentials() (PostgresCredentials, error) {
	pw, err := randomPassword(24)
	if err != nil {
		return PostgresCredentials{}, err
	}
	return PostgresCredentials{Host: "localhost", Port: "5432", Name: "installer", User: "admin", Password: pw}, nil
}

func (c PostgresCredentials) String() string {
	return fmt.Sprintf("postgres://%s:<redacted>@%s/%s", c.User, net.JoinHostPort(c.Host, c.Port), c.Name)
}

// GoString redacts %#v too.
func (c PostgresCredentials) GoString() string { return c.String() }

// URL is a connection URL for these credentials (sslmode=disable, as
// assisted-service connects). Callers that reach the database another way
// (a port-forward) replace Host. Never log it.
func (c PostgresCredentials) URL() *url.URL {
	return &url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.Password),
		Host: net.JoinHostPort(c.Host, c.Port), Path: "/" + c.Name, RawQuery: "sslmode=disable"}
}

func (c PostgresCredentials) data() map[string][]byte {
	return map[string][]byte{KeyDBHost: []byte(c.Host), KeyDBPort: []byte(c.Port), KeyDBName: []byte(c.Name),
		KeyDBUser: []byte(c.User), KeyDBPassword: []byte(c.Password)}
}

// ReadPostgresSecret reads the postgres Secret of namespace ns.
func ReadPostgresSecret(ctx context.Context, c kubernetes.Interface, ns string) (PostgresCredentials, error) {
	s, err := c.CoreV1().Secrets(ns).Get(ctx, PostgresSecretName, metav1.GetOptions{})
	if err != nil {
		return PostgresCredentials{}, fmt.Errorf("read secret %s/%s: %w", ns, PostgresSecretName, err)
	}
	return credentialsFrom(s)
}

func credentialsFrom(s *corev1.Secret) (PostgresCredentials, error) {
	var missing []string
	get := func(k string) string {
		v, ok := s.Data[k]
		if !ok || len(v) == 0 {
			missing = append(missing, k)
		}
		return string(v)
	}
	c := PostgresCredentials{Host: get(KeyDBHost), Port: get(KeyDBPort), Name: get(KeyDBName), User: get(KeyDBUser), Password: get(KeyDBPassword)}
	if len(missing) > 0 {
		sort.Strings(missing)
		return PostgresCredentials{}, fmt.Errorf("secret %s/%s lacks %s", s.Namespace, s.Name, strings.Join(missing, ", "))
	}
	return c, nil
}

// EnsurePostgresSecret creates the postgres Secret in ns with want unless it
// exists, and returns the credentials in effect (the existing Secret's when it
// was already there: the operator keeps those too) and whether it was created.
func EnsurePostgresSecret(ctx context.Context, c kubernetes.Interface, ns string, want PostgresCredentials) (PostgresCredentials, bool, error) {
	if want.Password == "" {
		return PostgresCredentials{}, false, fmt.Errorf("postgres secret: empty password")
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: PostgresSecretName, Namespace: ns, Annotations: map[string]string{AnnotationCreatedBy: "restore"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       want.data(),
	}
	_, err := c.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	switch {
	case err == nil:
		return want, true, nil
	case apierrors.IsAlreadyExists(err):
		have, err := ReadPostgresSecret(ctx, c, ns)
		return have, false, err
	}
	return PostgresCredentials{}, false, fmt.Errorf("create secret %s/%s: %w", ns, PostgresSecretName, err)
}

const passwordAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomPassword(n int) (string, error) {
	b := make([]byte, n)
	for i := range b {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(len(passwordAlphabet))))
		if err != nil {
			return "", err
		}
		b[i] = passwordAlphabet[j.Int64()]
	}
	return string(b), nil
}
