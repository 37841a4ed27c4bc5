package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// accessLine is one GET of a blob in distribution's access log (gorilla's
// combined format: "GET /v2/<repo>/blobs/<digest> HTTP/1.1" <status> <bytes>).
var accessLine = regexp.MustCompile(`"GET /v2/[^ ]+/blobs/(sha256:[0-9a-f]{64}) HTTP/([0-9.]+)" (\d{3}) (\d+)`)

// TestBundle_ExtractTurnsToRangesOnASlowLink: `bundle extract` from Debian's
// docker-registry (distribution 2.8) with TLS and basic auth, through a link
// that gives each TCP connection 16 MB/s, starts with one GET per part and,
// once the first 32 MiB showed it waits on the link, fetches the rest as
// Range requests (the distribution-spec's "A registry SHOULD support the
// Range request header", spec.md, "Pulling blobs") on connections of their
// own (HTTP/1.1, where the rest speaks HTTP/2). The registry's access log is the judge: the first part came whole
// (200); the last parts only as ranges (206), several each, the bytes the
// registry says it sent adding up to each part's size. The tree extracts
// whole. Then the same extract through a link that, after the turn, resets
// every open connection once still succeeds: the broken ranges are asked
// again, where one stream per blob fails (TestBundle_ExtractNetworkCut).
func TestBundle_ExtractTurnsToRangesOnASlowLink(t *testing.T) {
	t.Parallel()
	reg := harness.StartDockerRegistry(t, harness.DockerRegistryOptions{TLS: true, Auth: true, AccessLog: true})
	p := harness.NewPlugin(t)
	key, recipient := ageKey(t)
	data := bulkData(t, "kubeadmin-pw-not-secret-here")
	ref := reg.Ref("assisted/node0", "v1")
	out := p.MustRun(t, append([]string{"bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient,
		"--signing-key", signingKeyFile(t), "--part-size", "8Mi", "-o", "json"}, registryArgs(reg)...)...).Stdout
	var created struct {
		Layers []struct {
			Parts []struct {
				Digest string `json:"digest"`
				Size   int64  `json:"size"`
			} `json:"parts"`
		} `json:"layers"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || len(created.Layers) != 1 || len(created.Layers[0].Parts) < 7 {
		t.Fatalf("create -o json: want one layer in at least 7 parts (48 MiB and more in parts of 8 MiB): %v\n%s", err, out)
	}
	parts := created.Layers[0].Parts

	proxy := harness.StartFaultyProxy(t, reg.Host)
	proxy.CapDown(16e6)
	viaProxy := *reg
	viaProxy.Host = proxy.Addr
	viaProxy.AuthFile = filepath.Join(t.TempDir(), "auth.json")
	harness.WriteAuthFile(t, viaProxy.AuthFile, proxy.Addr, reg.Username, reg.Password)
	extract := func(dir string) {
		t.Helper()
		p.MustRun(t, append([]string{"bundle", "extract", viaProxy.Ref("assisted/node0", "v1"), "--signer", signerFile(t), "--identity", key, "--dir", dir}, registryArgs(&viaProxy)...)...)
		assertExtracted(t, data, filepath.Join(dir, "files"))
	}
	extract(filepath.Join(t.TempDir(), "out"))

	type served struct{ whole, ranges, rangeBytes int64 }
	seen := map[string]*served{}
	for _, pt := range parts {
		seen[pt.Digest] = &served{}
	}
	for _, m := range accessLine.FindAllStringSubmatch(reg.Output(), -1) {
		s := seen[m[1]]
		if s == nil {
			continue // the config, the metadata
		}
		n, _ := strconv.ParseInt(m[4], 10, 64)
		switch m[3] {
		case "200":
			s.whole++
		case "206":
			s.ranges++
			s.rangeBytes += n
			if m[2] != "1.1" {
				// HTTP/2 would carry every range on one connection.
				t.Errorf("a range of part %s came over HTTP/%s, want HTTP/1.1 (a connection of its own)", m[1], m[2])
			}
		}
	}
	if s := seen[parts[0].Digest]; s.whole != 1 || s.ranges != 0 {
		t.Errorf("part 1: the registry's log shows %+v, want one whole GET (200) and no range", *s)
	}
	for i := len(parts) - 2; i < len(parts); i++ {
		// Every part but the last holds 8 MiB: more than one range.
		pt := parts[i]
		if s := seen[pt.Digest]; s.whole != 0 || s.rangeBytes != pt.Size || (i < len(parts)-1 && s.ranges < 2) {
			t.Errorf("part %d (%d bytes): the registry's log shows %+v, want ranges only (206), adding up to its size, 2 or more for a whole part", i+1, pt.Size, *s)
		}
	}
	if t.Failed() {
		t.Fatalf("registry access log:\n%s", reg.Output())
	}

	proxy.DropDownAfter(40 << 20)
	extract(filepath.Join(t.TempDir(), "again"))
	if proxy.Cuts() != 1 {
		t.Fatalf("the link was reset %d times, want 1", proxy.Cuts())
	}
}
