package ignition

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/ignition/v2/config/v3_4/types"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
	"github.com/kubectl-assisted/kubectl-assisted/day2/release"
)

// go test ./day2/ignition -run TestGolden -update rewrites testdata/*.golden.
// Every value in them is justified in testdata/CITATIONS.md.
var update = flag.Bool("update", false, "rewrite the golden files")

const (
	testInfraEnvID = "5b7e1c3a-0d2f-4e8b-9a61-7c2d4e6f8a90"
	testUserCA     = "-----BEGIN CERTIFICATE-----\nMIIBpjCCAU2gAwIBAgIUQDx0V8/C14pdpggl3MiG93c2gBMwCgYIKoZIzj0EAwIw\nKDEmMCQGA1UEAwwda3ViZWN0bC1hc3Npc3RlZC10ZXN0LXVzZXItY2EwIBcNMjYx\nMjAyMDIxOTU1WhgPMjEyNjExMDgwMjE5NTVaMCgxJjAkBgNVBAMMHWt1YmVjdGwt\nYXNzaXN0ZWQtdGVzdC11c2VyLWNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\nuiqIfb64W4gVhgYmCQcpIsiBN5+jQCW9mxDlvSmAQH3iOX86spW49gORwFwWxuoF\nNUliwfi0cAHNb5xXkDPn4aNTMFEwHQYDVR0OBBYEFKze7D67K1Gw5LBb1GzSh3jZ\n4HiCMB8GA1UdIwQYMBaAFKze7D67K1Gw5LBb1GzSh3jZ4HiCMA8GA1UdEwEB/wQF\nMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgbcw7fHlTPKIFRvJkx/seZp/F58f91KiJ\nM2Ei9YvzVG4CIExE3WpGnG6b7Hr0rjA5U5rFOHFqfYh/prvo05Run2Ab\n-----END CERTIFICATE-----\n"
	// A real self-signed P-256 certificate: the on-host service parses it.
	testCAPEM = "-----BEGIN CERTIFICATE-----\nMIIBpTCCAUugAwIBAgIUI4y9m1h6tDYLgfJoJlDTm/OXBjwwCgYIKoZIzj0EAwIw\nJzElMCMGA1UEAwwca3ViZWN0bC1hc3Npc3RlZC10ZXN0LW1jcy1jYTAgFw0yNjEy\nMDIwMjE5NTVaGA8yMTI2MTEwODAyMTk1NVowJzElMCMGA1UEAwwca3ViZWN0bC1h\nc3Npc3RlZC10ZXN0LW1jcy1jYTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABAds\nKUIYKCysQGg0vYJ+wF+PffBlLF/wkiB2CkM145q5renKqeUAk51CxynwJrwnt9gU\no4tl6vZjRGsUzZecFeWjUzBRMB0GA1UdDgQWBBTjgCV9wxZAXkRvJ92/mDeo1TaX\nvDAfBgNVHSMEGDAWgBTjgCV9wxZAXkRvJ92/mDeo1TaXvDAPBgNVHRMBAf8EBTAD\nAQH/MAoGCCqGSM49BAMCA0gAMEUCIExIDcwFtAkVu4DdQhQPr8yKPFA/8xVtIPSe\n/F8ae47iAiEA7VVsZIxTPhvH1/cvVxymG0AwTCwsjJrzZ+dRYIc9xBk=\n-----END CERTIFICATE-----\n"
)

var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func testInput(t *testing.T, version string) Input {
	t.Helper()
	p, err := ProfileFor(version)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := authtoken.Mint(p.Tokens, testInfraEnvID, testNow)
	if err != nil {
		t.Fatal(err)
	}
	rot := false
	return Input{
		Cluster: &clusterinfo.Info{
			ClusterID: "3f2c9d1e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", ClusterName: "ostest", BaseDomain: "example.com",
			APIDNSName: "api.ostest.example.com", Version: version, Platform: "baremetal", Architecture: "x86_64",
			ReleaseImage: "quay.io/openshift-release-dev/ocp-release@sha256:" + strings.Repeat("a", 64),
			PullSecret:   `{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}`,
			UserCABundle: testUserCA,
			ImageDigestSources: []clusterinfo.ImageDigestSource{{Source: "quay.io/openshift-release-dev/ocp-release",
				Mirrors: []string{"mirror.example.com:5000/ocp/release"}}},
			OSImage:          &clusterinfo.OSImage{Location: "https://example.com/rhcos-live.x86_64.iso", Release: "418.94.202501221327-0"},
			IgnitionEndpoint: &clusterinfo.IgnitionEndpoint{URL: "https://api-int.ostest.example.com:22623/config/worker", CACertificate: testCAPEM},
			SSHKey:           "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINv7Ht9SxKXmZUEWuEHtjSV3AOltssPYDNqyxEbrJIoQ core@cluster",
			ChronyConf:       "server 192.0.2.1 iburst\n",
		},
		Nodes: &nodesconfig.Config{Hosts: []nodesconfig.Host{{
			Hostname: "extra-worker-0", Role: "worker",
			RootDeviceHints: &nodesconfig.RootDeviceHints{DeviceName: "/dev/sda", Rotational: &rot},
			Interfaces:      []nodesconfig.Interface{{Name: "eth0", MACAddress: "00:EF:44:21:E6:A5"}, {Name: "eth1", MACAddress: "00:ef:44:21:e6:a6"}},
			NetworkConfig: map[string]any{"interfaces": []any{map[string]any{"name": "eth0", "type": "ethernet", "state": "up",
				"mac-address": "00:ef:44:21:e6:a5", "ipv4": map[string]any{"enabled": true, "dhcp": false,
					"address": []any{map[string]any{"ip": "192.168.111.90", "prefix-length": 24}}}}}},
		}}},
		Arch: "x86_64",
		Payload: &release.Payload{Ref: "mirror.example.com:5000/ocp/release@sha256:" + strings.Repeat("a", 64), Images: release.ImageReferences{
			release.ImageAssistedService: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("1", 64),
			release.ImageAgent:           "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("2", 64),
			release.ImageInstaller:       "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("3", 64),
			release.ImageController:      "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("4", 64),
			release.ImageUtils:           "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("5", 64),
		}},
		Profile:    p,
		Token:      tok,
		InfraEnvID: testInfraEnvID,
		DBPassword: "db-password-for-test",
	}
}

var jwtRE = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// normalize renders the config as text: every file (path, mode, contents)
// and every unit, with each JWT replaced by its verified, decoded claims and
// the random public key by a placeholder, so the golden files are stable and
// show what the tokens say.
func normalize(t *testing.T, cfg *types.Config, pub string) string {
	t.Helper()
	var s strings.Builder
	fix := func(text string) string {
		text = jwtRE.ReplaceAllStringFunc(text, func(tok string) string {
			c, err := authtoken.Verify(tok, pub)
			if err != nil {
				t.Fatalf("a token in the config does not verify with the config's key: %v", err)
			}
			raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				v := m[k]
				if k == "exp" {
					v = c.ExpiresAt.Format(time.RFC3339)
				}
				parts = append(parts, fmt.Sprintf("%s=%v", k, v))
			}
			return "<ES256 JWT " + strings.Join(parts, " ") + ">"
		})
		return strings.ReplaceAll(text, pub, "<EC_PUBLIC_KEY_PEM base64>")
	}
	if len(cfg.Passwd.Users) > 0 {
		u := cfg.Passwd.Users[0]
		fmt.Fprintf(&s, "=== user %s ssh=%v\n", u.Name, u.SSHAuthorizedKeys)
	}
	for _, f := range cfg.Storage.Files {
		data, err := decodeSource(*f.Contents.Source)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		fmt.Fprintf(&s, "=== file %s mode=%#o\n%s", f.Path, *f.Mode, fix(string(data)))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			s.WriteString("\n")
		}
	}
	for _, u := range cfg.Systemd.Units {
		en := u.Enabled != nil && *u.Enabled
		if u.Contents == nil {
			fmt.Fprintf(&s, "=== unit %s enabled=%v (the system's own unit)\n", u.Name, en)
			continue
		}
		fmt.Fprintf(&s, "=== unit %s enabled=%v\n%s", u.Name, en, fix(*u.Contents))
	}
	return s.String()
}

func decodeSource(src string) ([]byte, error) {
	const p = "data:;base64,"
	if !strings.HasPrefix(src, p) {
		return nil, fmt.Errorf("source %.30q is not a base64 data URL", src)
	}
	return base64.StdEncoding.DecodeString(src[len(p):])
}

func render(t *testing.T, in Input) *types.Config {
	t.Helper()
	raw, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cfg, rpt, err := v3_4.Parse(raw)
	if err != nil || rpt.IsFatal() {
		t.Fatalf("rendered config does not validate: %v %s", err, rpt.String())
	}
	return &cfg
}

func TestGolden(t *testing.T) {
	for _, v := range []string{"4.17.14", "4.18.3", "4.19.7", "4.20.1"} {
		t.Run(v, func(t *testing.T) {
			in := testInput(t, v)
			got := normalize(t, render(t, in), in.Token.PublicKey)
			golden := filepath.Join("testdata", "render-"+majorMinor(v)+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("rendered config differs from %s:\n%s", golden, diff(string(want), got))
			}
		})
	}
}

func diff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return ""
}

// files returns the decoded files by path.
func files(t *testing.T, cfg *types.Config) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range cfg.Storage.Files {
		d, err := decodeSource(*f.Contents.Source)
		if err != nil {
			t.Fatal(err)
		}
		out[f.Path] = string(d)
	}
	return out
}

func units(cfg *types.Config) map[string]string {
	out := map[string]string{}
	for _, u := range cfg.Systemd.Units {
		if u.Contents != nil {
			out[u.Name] = *u.Contents
		}
	}
	return out
}

// envOf parses KEY=value lines.
func envOf(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// The tokens in the env files are those each version's service and client
// need, decoded and checked here independently of the golden files.
func TestTokensPerVersion(t *testing.T) {
	for _, tc := range []struct {
		version        string
		scheme         map[string]string // env var -> auth_scheme claim ("" = none)
		rendezvousUser bool
		watcher        bool
	}{
		// 4.17: one token {infra_env_id, exp} (release-4.17 agent_local_authenticator.go).
		{"4.17.14", map[string]string{"AGENT_AUTH_TOKEN": "", "USER_AUTH_TOKEN": ""}, false, false},
		// 4.18+: one token per scheme (release-4.18 agent_local_authz_handler.go).
		{"4.18.3", map[string]string{"AGENT_AUTH_TOKEN": "agentAuth", "USER_AUTH_TOKEN": "userAuth", "WATCHER_AUTH_TOKEN": "watcherAuth"}, true, true},
		{"4.19.7", map[string]string{"AGENT_AUTH_TOKEN": "agentAuth", "USER_AUTH_TOKEN": "userAuth", "WATCHER_AUTH_TOKEN": "watcherAuth"}, true, true},
		{"4.20.1", map[string]string{"AGENT_AUTH_TOKEN": "agentAuth", "USER_AUTH_TOKEN": "userAuth", "WATCHER_AUTH_TOKEN": "watcherAuth"}, true, true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			in := testInput(t, tc.version)
			f := files(t, render(t, in))
			svc := envOf(f[ServiceEnv])
			pub := svc["EC_PUBLIC_KEY_PEM"]
			for name, scheme := range tc.scheme {
				c, err := authtoken.Verify(svc[name], pub)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if c.AuthScheme != scheme {
					t.Fatalf("%s auth_scheme %q, want %q", name, c.AuthScheme, scheme)
				}
				if scheme == "" && c.InfraEnvID != svc["INFRA_ENV_ID"] {
					t.Fatalf("%s infra_env_id %q, INFRA_ENV_ID %q", name, c.InfraEnvID, svc["INFRA_ENV_ID"])
				}
				if want := testNow.Add(48 * time.Hour); !c.ExpiresAt.Equal(want) {
					t.Fatalf("%s exp %s, want %s", name, c.ExpiresAt, want)
				}
			}
			_, hasWatcher := svc["WATCHER_AUTH_TOKEN"]
			if hasWatcher != tc.watcher {
				t.Fatalf("WATCHER_AUTH_TOKEN present = %v", hasWatcher)
			}
			rv := envOf(f[RendezvousEnv])
			if got := rv["USER_AUTH_TOKEN"]; (got != "") != tc.rendezvousUser || (got != "" && got != svc["USER_AUTH_TOKEN"]) {
				t.Fatalf("rendezvous-host.env USER_AUTH_TOKEN %q", got)
			}
			if svc["INFRA_ENV_ID"] != testInfraEnvID {
				t.Fatalf("INFRA_ENV_ID %q", svc["INFRA_ENV_ID"])
			}
			var req []map[string]any
			if err := json.Unmarshal([]byte(svc["HW_VALIDATOR_REQUIREMENTS"]), &req); err != nil || len(req) != 1 || req[0]["version"] != "default" || req[0]["worker"] == nil {
				t.Fatalf("HW_VALIDATOR_REQUIREMENTS %q: %v", svc["HW_VALIDATOR_REQUIREMENTS"], err)
			}
		})
	}
}

// Rows 1, 2, 5, 6 of issue 16, checked directly.
func TestUnitsWireTheJoin(t *testing.T) {
	in := testInput(t, "4.19.7")
	cfg := render(t, in)
	f, u := files(t, cfg), units(cfg)
	for _, name := range []string{"assisted-service.service", "agent-import-cluster.service", "agent-register-infraenv.service", "apply-host-config.service", "agent.service", "agent-add-node.service"} {
		if !strings.Contains(u[name], "EnvironmentFile="+ServiceEnv+"\n") {
			t.Errorf("%s does not load %s (the user token lives there)", name, ServiceEnv)
		}
	}
	if !strings.Contains(u["agent.service"], "cp /usr/bin/agent /hostbin") || !strings.Contains(f["/usr/local/bin/start-agent.sh"], "exec /usr/local/bin/agent ") ||
		!strings.Contains(f["/usr/local/bin/start-agent.sh"], `PULL_SECRET_TOKEN="${AGENT_AUTH_TOKEN}"`) || strings.Contains(f["/usr/local/bin/start-agent.sh"], "next_step_runner") {
		t.Error("the agent binary must register the host (it starts next_step_runner itself)")
	}
	if !strings.Contains(u["apply-host-config.service"], "--env INFRA_ENV_ID") {
		t.Error("apply-host-config does not pass INFRA_ENV_ID")
	}
	if !strings.Contains(u["agent-add-node.service"], "Requires=apply-host-config.service") {
		t.Error("agent-add-node must Require apply-host-config")
	}
	var ep map[string]string
	if err := json.Unmarshal([]byte(f[ClusterConfigDir+"/worker-ignition-endpoint.json"]), &ep); err != nil {
		t.Fatal(err)
	}
	if ep["ca_certificate"] != base64.StdEncoding.EncodeToString([]byte(testCAPEM)) || ep["url"] != "https://api-int.ostest.example.com:22623/config" {
		t.Fatalf("worker-ignition-endpoint.json %v", ep)
	}
	if _, ok := f[HostnamesDir+"/00:ef:44:21:e6:a5"]; !ok {
		t.Error("hostname not keyed by the first MAC")
	}
	if _, ok := f[HostnamesDir+"/00:ef:44:21:e6:a6"]; ok {
		t.Error("hostname keyed by a second MAC")
	}
	if !strings.Contains(u["assisted-service.service"], "-v "+TrustBundlePath+":"+TrustBundlePath+":ro") {
		t.Error("the user CA must reach the service through the extracted trust bundle")
	}
}

// Every script parses with the real bash.
func TestScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is required")
	}
	in := testInput(t, "4.18.3")
	for p, body := range files(t, render(t, in)) {
		if !strings.HasPrefix(p, "/usr/local/bin/") {
			continue
		}
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(body)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("%s: %v %s", p, err, stderr.String())
		}
	}
}

func TestProfileFor(t *testing.T) {
	for v, want := range map[string]authtoken.Kind{"4.17.0": authtoken.KindSingle, "4.18.1": authtoken.KindPerScheme, "4.19.10": authtoken.KindPerScheme, "4.20.0-rc.1": authtoken.KindPerScheme} {
		p, err := ProfileFor(v)
		if err != nil || p.Tokens != want {
			t.Errorf("%s: %+v %v", v, p, err)
		}
	}
	for _, v := range []string{"4.16.9", "4.21.0", "5.0.0", "", "4.x"} {
		if _, err := ProfileFor(v); err == nil || !strings.Contains(err.Error(), "4.17 to 4.20") {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// A token of the wrong kind for the version is refused, not rendered.
func TestRenderRefusesMismatchedTokenKind(t *testing.T) {
	in := testInput(t, "4.18.3")
	single, _ := authtoken.Mint(authtoken.KindSingle, testInfraEnvID, testNow)
	in.Token = single
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "does not suit") {
		t.Fatalf("err = %v", err)
	}
}

func TestReleaseMirror(t *testing.T) {
	src := []clusterinfo.ImageDigestSource{
		{Source: "quay.io/openshift-release-dev/ocp-v4.0-art-dev", Mirrors: []string{"m.example:5000/art"}},
		{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []string{"m.example:5000/ocp/release", "m2.example/ocp/release"}},
		{Source: "registry.example:5000/ns", Mirrors: []string{"mirror.ns"}},
	}
	for in, want := range map[string]string{
		"quay.io/openshift-release-dev/ocp-release@sha256:abc":       "m.example:5000/ocp/release@sha256:abc",
		"quay.io/openshift-release-dev/ocp-release:4.19.7-x86_64":    "m.example:5000/ocp/release:4.19.7-x86_64",
		"quay.io/openshift-release-dev/ocp-release-nightly@sha256:a": "",
		"registry.example:5000/other@sha256:abc":                     "",
		// A namespace-level source covers the repositories below it.
		"registry.example:5000/ns/ocp/release@sha256:abc": "mirror.ns/ocp/release@sha256:abc",
		"registry.example:5000/nsx/release@sha256:abc":    "",
	} {
		if got := ReleaseMirror(in, src); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// Without coreos-bootimages the service must still start: every OS image
// needs a url and a version (assisted-service internal/versions/osimages.go
// validateOSImage, release-4.17 .. master; found in the rehearsal with the
// real master build, which exited "Missing value in OSImage for 'url' field").
func TestOSImagesAlwaysComplete(t *testing.T) {
	in := testInput(t, "4.20.1")
	in.Cluster.OSImage = nil
	svc := envOf(files(t, render(t, in))[ServiceEnv])
	var imgs []map[string]string
	if err := json.Unmarshal([]byte(svc["OS_IMAGES"]), &imgs); err != nil || len(imgs) != 1 {
		t.Fatalf("OS_IMAGES %q: %v", svc["OS_IMAGES"], err)
	}
	for _, k := range []string{"openshift_version", "cpu_architecture", "url", "version"} {
		if imgs[0][k] == "" {
			t.Errorf("OS_IMAGES lacks %s: %v", k, imgs[0])
		}
	}
}
