package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// authEnv points every variable the search order reads into a temp dir and
// returns it; unset ones are unset for the test.
func authEnv(t *testing.T, set map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "DOCKER_CONFIG", AuthFileEnv} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	t.Setenv("HOME", filepath.Join(dir, "home"))
	for k, v := range set {
		t.Setenv(k, strings.ReplaceAll(v, "$T", dir))
	}
	return dir
}

func TestAuthFiles_Order(t *testing.T) {
	d := authEnv(t, map[string]string{"XDG_RUNTIME_DIR": "$T/run", "XDG_CONFIG_HOME": "$T/cfg", "DOCKER_CONFIG": "$T/dock"})
	got := AuthFiles("")
	want := []string{d + "/run/containers/auth.json", d + "/cfg/containers/auth.json", d + "/dock/config.json"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("with every variable set:\n got %q\nwant %q", got, want)
	}

	// --registry-config wins over everything, then REGISTRY_AUTH_FILE; each
	// is the only file read (containers/image: a user-specified path).
	t.Setenv(AuthFileEnv, d+"/env.json")
	if got := AuthFiles(""); len(got) != 1 || got[0] != d+"/env.json" {
		t.Fatalf("REGISTRY_AUTH_FILE: %q", got)
	}
	if got := AuthFiles("/x/flag.json"); len(got) != 1 || got[0] != "/x/flag.json" {
		t.Fatalf("explicit file: %q", got)
	}
}

func TestAuthFiles_DefaultsUnderHome(t *testing.T) {
	d := authEnv(t, map[string]string{"XDG_RUNTIME_DIR": "$T/run"})
	got := AuthFiles("")
	want := []string{d + "/run/containers/auth.json", d + "/home/.config/containers/auth.json", d + "/home/.docker/config.json"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("without XDG_CONFIG_HOME and DOCKER_CONFIG:\n got %q\nwant %q", got, want)
	}
	if runtime.GOOS != "linux" {
		return
	}
	os.Unsetenv("XDG_RUNTIME_DIR")
	got = AuthFiles("")
	if want := fmt.Sprintf("/run/containers/%d/auth.json", os.Getuid()); len(got) != 3 || got[0] != want {
		t.Fatalf("without XDG_RUNTIME_DIR the first file is %q, want podman's %s", got, want)
	}
}

// writeAuth writes a docker config with user:pass for each host.
func writeAuth(t *testing.T, path string, entries map[string][2]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for host, up := range entries {
		parts = append(parts, fmt.Sprintf(`%q:{"username":%q,"password":%q}`, host, up[0], up[1]))
	}
	if err := os.WriteFile(path, []byte(`{"auths":{`+strings.Join(parts, ",")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, c *Credentials, host string) auth.Credential {
	t.Helper()
	cr, err := c.Get(context.Background(), host)
	if err != nil {
		t.Fatalf("Get(%s): %v", host, err)
	}
	return cr
}

func TestCredentials_ChainedPerRegistry(t *testing.T) {
	d := authEnv(t, map[string]string{"XDG_RUNTIME_DIR": "$T/run", "XDG_CONFIG_HOME": "$T/cfg", "DOCKER_CONFIG": "$T/dock"})
	writeAuth(t, d+"/run/containers/auth.json", map[string][2]string{"a.example:5000": {"run-user", "run-pass"}})
	writeAuth(t, d+"/cfg/containers/auth.json", map[string][2]string{"a.example:5000": {"cfg-user", "cfg-pass"}, "b.example": {"cfg-user", "cfg-pass"}})
	// docker's legacy key form (scheme and path) still names the host.
	writeAuth(t, d+"/dock/config.json", map[string][2]string{"https://c.example/v1/": {"dock-user", "dock-pass"}, "b.example": {"dock-user", "dock-pass"}})

	c, err := NewCredentials("")
	if err != nil {
		t.Fatal(err)
	}
	for host, user := range map[string]string{"a.example:5000": "run-user", "b.example": "cfg-user", "c.example": "dock-user", "d.example": ""} {
		if got := get(t, c, host); got.Username != user {
			t.Errorf("%s: user %q, want %q (first file with credentials for the host)", host, got.Username, user)
		}
	}

	// A pull secret comes after every file.
	if err := c.AddDockerConfig("the pull secret", []byte(`{"auths":{"a.example:5000":{"auth":"cHM6cHM="},"d.example":{"auth":"cHM6cHM="}}}`)); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, "a.example:5000"); got.Username != "run-user" {
		t.Errorf("a file must win over the pull secret, got %q", got.Username)
	}
	if got := get(t, c, "d.example"); got.Username != "ps" || got.Password != "ps" {
		t.Errorf("the pull secret fills in a host no file has: %+v", got)
	}

	// REGISTRY_AUTH_FILE replaces the defaults: b.example is no longer found.
	t.Setenv(AuthFileEnv, d+"/dock/config.json")
	c, err = NewCredentials("")
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, "a.example:5000"); got != auth.EmptyCredential {
		t.Errorf("REGISTRY_AUTH_FILE is the only file, yet a.example:5000 got %q", got.Username)
	}
	if got := get(t, c, "b.example"); got.Username != "dock-user" {
		t.Errorf("b.example from REGISTRY_AUTH_FILE: %q", got.Username)
	}
	// --registry-config wins over REGISTRY_AUTH_FILE.
	c, err = NewCredentials(d + "/run/containers/auth.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, "b.example"); got != auth.EmptyCredential {
		t.Errorf("the explicit file is the only one, yet b.example got %q", got.Username)
	}
	if got := get(t, c, "a.example:5000"); got.Username != "run-user" {
		t.Errorf("a.example:5000 from the explicit file: %q", got.Username)
	}
}

func TestCredentials_Errors(t *testing.T) {
	d := authEnv(t, nil)
	if _, err := NewCredentials(d + "/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("a missing explicit file: %v", err)
	}
	// A missing REGISTRY_AUTH_FILE reads as empty, as for podman.
	t.Setenv(AuthFileEnv, d+"/missing.json")
	c, err := NewCredentials("")
	if err != nil {
		t.Fatalf("missing REGISTRY_AUTH_FILE: %v", err)
	}
	if got := get(t, c, "a.example"); got != auth.EmptyCredential {
		t.Fatalf("credentials from nowhere: %+v", got)
	}
	bad := d + "/bad.json"
	if err := os.WriteFile(bad, []byte(`{"auths": not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCredentials(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a file that is not JSON: %v", err)
	}
	if err := (&Credentials{}).AddDockerConfig("the cluster's pull secret", []byte("nope")); err == nil || !strings.Contains(err.Error(), "the cluster's pull secret") {
		t.Fatalf("a bad pull secret: %v", err)
	}
}

func TestDockerConfigFor_OnlyThatHost(t *testing.T) {
	d := authEnv(t, map[string]string{"DOCKER_CONFIG": "$T/dock"})
	writeAuth(t, d+"/dock/config.json", map[string][2]string{"reg.example:5000": {"kat", "s3cret"}, "other.example": {"x", "y"}})
	b, err := DockerConfigFor(context.Background(), "", "reg.example:5000")
	if err != nil {
		t.Fatal(err)
	}
	// base64("kat:s3cret") = a2F0OnMzY3JldA==
	if want := `{"auths":{"reg.example:5000":{"auth":"a2F0OnMzY3JldA=="}}}`; string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	if b, err := DockerConfigFor(context.Background(), "", "none.example"); err != nil || b != nil {
		t.Fatalf("a host without credentials: %s, %v", b, err)
	}
}
