package ignition

import (
	"regexp"
	"strings"
	"testing"
)

// The units and scripts are embedded files that name paths by value; every
// such path must be one the render writes (or a directory of such files), so
// a constant renamed in Go cannot leave a unit pointing at nothing.
func TestEmbeddedFilesNameRenderedPaths(t *testing.T) {
	in := testInput(t, "4.19.7")
	cfg := render(t, in)
	f := files(t, cfg)
	written := func(p string) bool {
		if _, ok := f[p]; ok {
			return true
		}
		for q := range f {
			if strings.HasPrefix(q, strings.TrimSuffix(p, "/")+"/") {
				return true
			}
		}
		return false
	}
	// Produced at run time, not by the render: the agent binary copied out of
	// its image, the client inside the service image, the pod's files.
	runtime := map[string]bool{"/usr/local/bin/agent": true, "/usr/local/bin/agent-installer-client": true}
	pathRE := regexp.MustCompile(`/(?:etc/assisted|usr/local/share|usr/local/bin)/[A-Za-z0-9_.@/-]*[A-Za-z0-9_]`)
	var texts []string
	for name, body := range units(cfg) {
		texts = append(texts, name+"\n"+body)
	}
	for p, body := range f {
		if strings.HasPrefix(p, "/usr/local/bin/") {
			texts = append(texts, p+"\n"+body)
		}
	}
	seen := 0
	for _, text := range texts {
		name, body, _ := strings.Cut(text, "\n")
		for _, p := range pathRE.FindAllString(body, -1) {
			seen++
			if !runtime[p] && !written(p) {
				t.Errorf("%s names %s, which the render does not write", name, p)
			}
		}
	}
	// The package's own constants appear where the host reads them.
	for file, want := range map[string]string{
		"/usr/local/bin/set-hostname.sh":               `f="` + HostnamesDir + `/$mac"`,
		"/usr/local/bin/pre-network-manager-config.sh": `for dir in "$root` + NetworkDir + `"/*/; do`,
	} {
		if !strings.Contains(f[file], want) {
			t.Errorf("%s lacks %q", file, want)
		}
	}
	if seen < 20 {
		t.Fatalf("only %d paths found in the units and scripts: the pattern is wrong", seen)
	}
}
