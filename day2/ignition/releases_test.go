package ignition

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
)

// releaseFacts is testdata/releases/4.X.yaml: what one release's own
// assisted-service and agent-installer-client need from the ISO, read from
// the release branch named in it and rehearsed against a build of it.
type releaseFacts struct {
	Release         string              `json:"release"`
	AssistedService string              `json:"assistedService"`
	Agent           string              `json:"agent"`
	Tokens          string              `json:"tokens"` // single | per-scheme
	ClientToken     string              `json:"clientToken"`
	WorkflowType    string              `json:"workflowType"`
	Commands        map[string][]string `json:"commands"`
}

// TestReleaseFacts renders the ISO of each supported release and checks it
// against that release's facts: every variable the client's command reads
// (without a usable default) reaches the container that runs it, by name
// from the unit's environment, with a value; the client's token is of the
// kind the release's service takes, for the scheme of the client's routes.
func TestReleaseFacts(t *testing.T) {
	factFiles, err := filepath.Glob(filepath.Join("testdata", "releases", "4.*.yaml"))
	if err != nil || len(factFiles) != MaxMinor-MinMinor+1 {
		t.Fatalf("facts for %d releases (%v), want one per supported release 4.%d to 4.%d", len(factFiles), err, MinMinor, MaxMinor)
	}
	for _, f := range factFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var facts releaseFacts
		if err := yaml.UnmarshalStrict(raw, &facts); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		t.Run(facts.Release, func(t *testing.T) {
			in := testInput(t, facts.Release+".3")
			cfg := render(t, in)
			fs, us := files(t, cfg), units(cfg)
			runners := map[string]string{ // command -> the unit that runs its container
				"importCluster":    "agent-import-cluster.service",
				"registerInfraEnv": "agent-register-infraenv.service",
				"configure":        "apply-host-config.service",
			}
			if len(facts.Commands) != len(runners) {
				t.Fatalf("facts name commands %v, the ISO runs %d", facts.Commands, len(runners))
			}
			for cmd, vars := range facts.Commands {
				unit, ok := runners[cmd]
				if !ok {
					t.Fatalf("the ISO runs no %s", cmd)
				}
				env := unitEnv(t, us[unit], fs)
				line := podmanLine(t, cmd, us[unit], fs)
				passed := passedEnv(line)
				for _, v := range vars {
					val, byName := passed[v]
					if !byName {
						t.Errorf("%s (%s): %s is not passed to the container: %s", cmd, unit, v, line)
						continue
					}
					if val == "" {
						val = env[v]
					}
					if val == "" {
						t.Errorf("%s (%s): %s is passed but has no value in the unit's environment", cmd, unit, v)
					}
					if v == "WORKFLOW_TYPE" && val != facts.WorkflowType {
						t.Errorf("%s: WORKFLOW_TYPE %q, the release needs %q", cmd, val, facts.WorkflowType)
					}
					if v == facts.ClientToken {
						checkToken(t, facts, val, env["EC_PUBLIC_KEY_PEM"])
					}
				}
			}
		})
	}
}

func checkToken(t *testing.T, facts releaseFacts, tok, pub string) {
	t.Helper()
	c, err := authtoken.Verify(tok, pub)
	if err != nil {
		t.Fatalf("%s: %v", facts.ClientToken, err)
	}
	switch facts.Tokens {
	case "single":
		if c.AuthScheme != "" || c.InfraEnvID == "" {
			t.Errorf("%s: claims %+v, the release takes one token with infra_env_id", facts.ClientToken, c)
		}
	case "per-scheme":
		if c.AuthScheme != "userAuth" {
			t.Errorf("%s: auth_scheme %q, the client's routes are userAuth", facts.ClientToken, c.AuthScheme)
		}
	default:
		t.Fatalf("tokens %q", facts.Tokens)
	}
}

// unitEnv is what a unit's processes see: its EnvironmentFile=s (in order,
// as systemd reads KEY=value lines) and Environment= lines.
func unitEnv(t *testing.T, unit string, fs map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, l := range strings.Split(unit, "\n") {
		switch {
		case strings.HasPrefix(l, "EnvironmentFile="):
			p := strings.TrimPrefix(strings.TrimPrefix(l, "EnvironmentFile="), "-")
			body, ok := fs[p]
			if !ok {
				t.Fatalf("EnvironmentFile %s is not in the ISO", p)
			}
			for k, v := range envOf(body) {
				env[k] = v
			}
		case strings.HasPrefix(l, "Environment="):
			kv := strings.Trim(strings.TrimPrefix(l, "Environment="), `"`)
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
	}
	return env
}

// podmanLine is the podman run command that runs the client command: in the
// unit's ExecStart, or in the script ExecStart runs.
func podmanLine(t *testing.T, cmd, unit string, fs map[string]string) string {
	t.Helper()
	for _, l := range strings.Split(unit, "\n") {
		exec, ok := strings.CutPrefix(l, "ExecStart=")
		if !ok {
			continue
		}
		if strings.Contains(exec, "agent-installer-client "+cmd) {
			return exec
		}
		if script, ok := fs[strings.Fields(exec)[0]]; ok {
			joined := strings.ReplaceAll(script, "\\\n", " ")
			for _, sl := range strings.Split(joined, "\n") {
				if strings.Contains(sl, "podman run") && strings.Contains(sl, "agent-installer-client "+cmd) {
					return sl
				}
			}
		}
	}
	t.Fatalf("no podman run of agent-installer-client %s in:\n%s", cmd, unit)
	return ""
}

var envFlagRE = regexp.MustCompile(`--env[ =]([A-Z_][A-Z0-9_]*)(=(\S*))?`)

// passedEnv: the variables podman passes into the container, by name (value
// "": the unit's) or with a value.
func passedEnv(line string) map[string]string {
	m := map[string]string{}
	for _, g := range envFlagRE.FindAllStringSubmatch(line, -1) {
		m[g[1]] = g[3]
	}
	return m
}

func (f releaseFacts) String() string {
	return fmt.Sprintf("%s (%s, %s)", f.Release, f.AssistedService, f.Agent)
}
