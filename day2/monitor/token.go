package monitor

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The Secret where the add-nodes ISO build keeps the token its hosts accept.
const (
	AuthTokenNamespace = "openshift-config"
	AuthTokenSecret    = "agent-auth-token"
)

// authTokenKeys are tried in order: a dedicated watcher token when the ISO
// build stored one, else the agent token, which the installer's own monitor
// sends in the watcher header.
var authTokenKeys = []string{"watcherAuthToken", "agentAuthToken"}

// ReadAuthToken reads the token for the hosts' assisted-service from Secret
// openshift-config/agent-auth-token. The error never contains the token.
func ReadAuthToken(ctx context.Context, kube kubernetes.Interface) (string, error) {
	s, err := kube.CoreV1().Secrets(AuthTokenNamespace).Get(ctx, AuthTokenSecret, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read Secret %s/%s: %w", AuthTokenNamespace, AuthTokenSecret, err)
	}
	for _, k := range authTokenKeys {
		if v := s.Data[k]; len(v) > 0 {
			return string(v), nil
		}
	}
	return "", fmt.Errorf("Secret %s/%s has none of the keys %v", AuthTokenNamespace, AuthTokenSecret, authTokenKeys)
}
