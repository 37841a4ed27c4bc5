package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTools puts executable shell scripts named like the real tools into a
// fresh tool cache, so a component that fails to start can be provoked.
func fakeTools(t *testing.T, scripts map[string]string) {
	t.Helper()
	cache := t.TempDir()
	bin := filepath.Join(cache, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECTL_ASSISTED_CACHE", cache)
}

// A component that fails to start is one error naming it and saying why, never
// a panic (issue 15: a nil *Kube reached the deferred Stop).
func TestStartKube_FailingComponentIsNamed(t *testing.T) {
	cases := []struct {
		name    string
		scripts map[string]string
		want    []string
	}{
		{"etcd exits", map[string]string{
			"etcd":           `echo "etcd: cannot open data dir (simulated)" >&2; exit 3`,
			"kube-apiserver": `exec sleep 60`,
		}, []string{"etcd exited", "cannot open data dir (simulated)"}},
		{"kube-apiserver exits", map[string]string{
			"etcd":           `exec sleep 60`,
			"kube-apiserver": `echo "Error: unknown flag --bogus (simulated)" >&2; exit 1`,
		}, []string{"kube-apiserver exited", "unknown flag --bogus (simulated)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fakeTools(t, c.scripts)
			k, err := startKube()
			if err == nil {
				k.Stop()
				t.Fatal("startKube succeeded with a failing component")
			}
			if k != nil {
				t.Fatalf("startKube returned a Kube with error %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestStartKube_MissingBinaryIsNamed(t *testing.T) {
	fakeTools(t, map[string]string{"etcd": "exit 0"})
	t.Setenv("PATH", t.TempDir())
	_, err := startKube()
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver binary") {
		t.Fatalf("err = %v", err)
	}
}

func TestKubeStop_NilSafe(t *testing.T) {
	var k *Kube
	k.Stop() // must not panic
	(&Kube{}).Stop()
}
