// Package e2e runs the built kubectl-assisted binary, through kubectl's plugin
// discovery, against real PostgreSQL, registries and kube-apiserver.
package e2e

import (
	"os"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
