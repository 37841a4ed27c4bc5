package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's index.Plugin that the manifest must fill.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

func TestRenderManifest(t *testing.T) {
	sum := strings.Repeat("0a", 32)
	var archives []archive
	for _, p := range defaultPlatforms {
		archives = append(archives, archive{Platform: p, Name: archiveName("v1.2.3", p), SHA256: sum})
	}
	m, err := manifestFor("v1.2.3", defaultURLTemplate, archives)
	if err != nil {
		t.Fatal(err)
	}
	y, err := renderManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	var got krewPlugin
	if err := yaml.UnmarshalStrict(y, &got); err != nil {
		t.Fatalf("manifest is not strict YAML of a krew Plugin: %v\n%s", err, y)
	}
	if got.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || got.Kind != "Plugin" || got.Metadata.Name != "assisted" {
		t.Fatalf("type/name: %s %s %s", got.APIVersion, got.Kind, got.Metadata.Name)
	}
	s := got.Spec
	if s.Version != "v1.2.3" || s.Homepage != homepage {
		t.Fatalf("version %q homepage %q", s.Version, s.Homepage)
	}
	if s.ShortDescription == "" || strings.ContainsAny(s.ShortDescription, "\r\n") || len(s.ShortDescription) > 60 {
		t.Fatalf("shortDescription %q: want one short line", s.ShortDescription)
	}
	for _, want := range []string{"bundle create --resources cluster", "Secrets and ConfigMaps", "receipt ConfigMap",
		"openshift-config/agent-auth-token", "--approve-csrs", "certificatesigningrequests/approval"} {
		if !strings.Contains(s.Caveats, want) {
			t.Errorf("caveats do not mention %q", want)
		}
	}
	if !strings.Contains(s.Description, "oc assisted") {
		t.Error("description does not say the plugin runs under oc")
	}
	// Every release platform but the two krew's validator does not know.
	var got5 []string
	for _, p := range s.Platforms {
		got5 = append(got5, p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"])
	}
	if strings.Join(got5, " ") != "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64" {
		t.Fatalf("manifest platforms %v", got5)
	}
	win := s.Platforms[4]
	if win.Selector.MatchLabels["os"] != "windows" || win.Selector.MatchLabels["arch"] != "amd64" ||
		win.Bin != "kubectl-assisted.exe" || win.Sha256 != sum ||
		win.URI != "https://github.com/kubectl-assisted/kubectl-assisted/releases/download/v1.2.3/kubectl-assisted_v1.2.3_windows_amd64.zip" {
		t.Fatalf("windows platform = %+v", win)
	}
	if len(win.Files) != 2 || win.Files[0].From != "kubectl-assisted.exe" || win.Files[1].From != "LICENSE" {
		t.Fatalf("windows files = %+v", win.Files)
	}
}

func TestManifestForRefusesAnEmptyManifest(t *testing.T) {
	only := []archive{{Platform: platform{"linux", "s390x"}, Name: "x.tar.gz", SHA256: strings.Repeat("0", 64)}}
	if _, err := manifestFor("v1.0.0", defaultURLTemplate, only); err == nil {
		t.Fatal("a manifest without platforms was accepted")
	}
}

func TestSHA256SumsSortedByName(t *testing.T) {
	got := string(sha256sums([]archive{{Name: "b.zip", SHA256: "11"}, {Name: "a.tar.gz", SHA256: "22"}}))
	if got != "22  a.tar.gz\n11  b.zip\n" {
		t.Fatalf("sha256sums = %q", got)
	}
}
