package release

import (
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
)

func TestCandidates_MirrorsFirstForDigestsOnly(t *testing.T) {
	mirrors := []clusterinfo.ImageDigestSource{
		{Source: "quay.io/openshift-release-dev", Mirrors: []string{"mirror.lab:5000/ocp", "backup.lab/ocp"}},
		{Source: "quay.io/other", Mirrors: []string{"x/y"}},
	}
	got := Candidates("quay.io/openshift-release-dev/ocp-release@sha256:abc", mirrors)
	want := "mirror.lab:5000/ocp/ocp-release@sha256:abc,backup.lab/ocp/ocp-release@sha256:abc,quay.io/openshift-release-dev/ocp-release@sha256:abc"
	if strings.Join(got, ",") != want {
		t.Fatalf("got %v", got)
	}
	if got := Candidates("quay.io/openshift-release-dev/ocp-release:4.17.3", mirrors); len(got) != 1 {
		t.Fatalf("tag reference got mirrors: %v", got)
	}
	if got := Candidates("quay.io/openshift-release-devX/r@sha256:abc", mirrors); len(got) != 1 {
		t.Fatalf("prefix must match whole path components: %v", got)
	}
}
