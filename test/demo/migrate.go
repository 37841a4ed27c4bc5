package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/sign"
)

// migration is what step 3 produced, whichever way it ran.
type migration struct {
	Via        string          `json:"via"`
	Digest     string          `json:"digest"`
	ServiceURL string          `json:"serviceURL"`
	Steps      []migrationStep `json:"steps"`
}

// migrationStep is one part of the migration as the plugin timed it.
type migrationStep struct {
	Name            string  `json:"name"`
	State           string  `json:"state,omitempty"`
	Detail          string  `json:"detail,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// migrate is step 3: node 0's database, file storage and ABI manifests go
// through the registry as one encrypted bundle into cluster 0's database,
// file storage and API.
func (d *demo) migrate(s *stepRun) error {
	if d.cluster0Data != "" {
		if err := mkdirs(d.cluster0Data); err != nil {
			return err
		}
	}
	m, err := d.runMigration(s)
	if err != nil {
		return err
	}
	if m.Digest == "" {
		return fmt.Errorf("the migration reported no bundle digest")
	}
	d.migration = m
	s.say("bundle %s@%s", d.ref(), m.Digest)
	for _, st := range m.Steps {
		line := fmt.Sprintf("  %-14s %7s", st.Name, fmtDuration(st.DurationSeconds))
		if st.State != "" {
			line += "  " + st.State
		}
		if detail := strings.TrimPrefix(st.Detail, st.State+": "); detail != "" {
			line += ": " + detail
		}
		s.say("%s", line)
	}
	return nil
}

// runMigration is the one place that chooses how the migration runs:
// `kubectl assisted migrate`, or with -two-step the two commands it is made
// of, `bundle create` and `restore`.
func (d *demo) runMigration(s *stepRun) (*migration, error) {
	if d.opts.twoStep {
		return d.migrateInTwoSteps(s)
	}
	if d.opts.atReboot {
		return d.migrateAtReboot(s)
	}
	return d.migrateCommand(s)
}

// migrateCommand runs `kubectl assisted migrate` on node 0: preflight, bundle
// and push (encrypted to a key it makes and keeps in its state directory),
// restore directly into cluster 0's database and file storage, wait for the
// receipt, and switch the assisted-installer-controller over.
func (d *demo) migrateCommand(s *stepRun) (*migration, error) {
	args := []string{"migrate", "--to", d.ref(), "--state-dir", d.path("node0", "migrate-state"),
		"--db", d.node0DB, "--data-dir", d.node0.dataDir, "--manifests-dir", d.node0.manifestsDir,
		"--target-kubeconfig", d.kubeconfig, "-n", serviceNamespace,
		"--service-url", serviceURL}
	if d.cluster != nil {
		// As on a real install: the restore Job, fitted to the operator.
		args = append(args, "--agent-service-config", d.ascFile)
	} else {
		args = append(args, "--target-db", d.cluster0DB, "--target-data-dir", d.cluster0Data)
	}
	args = append(append(args, d.registryArgs()...), "-o", "json")
	res, err := d.assisted(s, args...)
	if err != nil {
		return nil, err
	}
	m := &migration{}
	if err := json.Unmarshal([]byte(res.Stdout), m); err != nil {
		return nil, fmt.Errorf("migrate -o json: %w", err)
	}
	m.Via = "kubectl assisted migrate"
	if d.cluster != nil {
		m.Via += " (restore Job on the node)"
		if err := d.serveCluster0(s); err != nil {
			return nil, err
		}
	}
	// The key pair migrate made for this run is a secret the output must not show.
	var key struct {
		IdentityFile string `json:"identityFile"`
	}
	_ = json.Unmarshal([]byte(res.Stdout), &key)
	if key.IdentityFile != "" {
		if b, err := os.ReadFile(key.IdentityFile); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "AGE-SECRET-KEY-") {
					d.secrets["age identity"] = strings.TrimSpace(line)
				}
			}
		}
	}
	return m, nil
}

// migrateInTwoSteps is what migrate does, as separate commands: `bundle
// create` on node 0, encrypted to a key made for this run, then `restore` on
// cluster 0 with that key, and `switchover`.
func (d *demo) migrateInTwoSteps(s *stepRun) (*migration, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	keyFile := d.path("keys", "bundle.agekey")
	if err := mkdirs(d.path("keys")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		return nil, err
	}
	d.secrets["age identity"] = id.String()
	s.say("age key for this bundle: %s (recipient %s)", keyFile, id.Recipient())
	// Node 0 signs the bundle; the restore accepts only a bundle signed by
	// this key.
	signingKey, signerFile := d.path("keys", "bundle-signing.key"), d.path("keys", "bundle-signing.pub")
	privPEM, pubPEM, err := sign.GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(signingKey, privPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(signerFile, pubPEM, 0o644); err != nil {
		return nil, err
	}
	d.secrets["signing key"] = strings.Split(string(privPEM), "\n")[1] // the base64 body
	s.say("signing key for this bundle: %s (public key %s)", signingKey, signerFile)

	m := &migration{Via: "kubectl assisted bundle create, restore, switchover", ServiceURL: serviceURL}
	create := []string{"bundle", "create", "--to", d.ref(),
		"--db", d.node0DB, "--data-dir", d.node0.dataDir, "--manifests-dir", d.node0.manifestsDir,
		"--recipient", id.Recipient().String(), "--signing-key", signingKey}
	create = append(append(create, d.registryArgs()...), "-o", "json")
	res, err := d.assistedNote(s, "on node 0", create...)
	if err != nil {
		return nil, err
	}
	var created struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &created); err != nil {
		return nil, fmt.Errorf("bundle create -o json: %w", err)
	}
	m.Digest = created.Digest
	m.Steps = append(m.Steps, migrationStep{Name: "bundle create", DurationSeconds: lastCommand(s)})

	restore := []string{"restore", d.refAt(created.Digest), "--identity", keyFile, "--signer", signerFile,
		"--db", d.cluster0DB, "--data-dir", d.cluster0Data,
		"-n", serviceNamespace, "--kubeconfig", d.kubeconfig, "--service-url", serviceURL}
	restore = append(append(restore, d.registryArgs()...), "-o", "json")
	res, err = d.assistedNote(s, "on cluster 0", restore...)
	if err != nil {
		return nil, err
	}
	// The restore result is read loosely: the demo checks what arrived
	// itself (step 4).
	var restored struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &restored); err != nil {
		return nil, fmt.Errorf("restore -o json: %w\n%s", err, tail(res.Stdout, 5))
	}
	if restored.Digest != "" && !strings.EqualFold(restored.Digest, created.Digest) {
		return nil, fmt.Errorf("restore reports bundle %s, created %s", restored.Digest, created.Digest)
	}
	m.Steps = append(m.Steps, migrationStep{Name: "restore", DurationSeconds: lastCommand(s)})

	res, err = d.assistedNote(s, "on cluster 0", "switchover", "--kubeconfig", d.kubeconfig, "-n", serviceNamespace, "--service-url", serviceURL)
	if err != nil {
		return nil, err
	}
	s.block(res.Stdout)
	m.Steps = append(m.Steps, migrationStep{Name: "switchover", DurationSeconds: lastCommand(s)})
	return m, nil
}

// lastCommand is how long the step's last command took.
func lastCommand(s *stepRun) float64 {
	return s.result.Commands[len(s.result.Commands)-1].DurationSeconds
}

// serveCluster0 makes what the Job left readable from here, as the operator
// will run it: its postgres container on the postgres PVC (the demo counts
// the rows through it), and the node's volume behind the assisted-service
// PVC.
func (d *demo) serveCluster0(s *stepRun) error {
	d.cluster0DB = d.cluster.ServeDatabase(d.r, serviceNamespace, operatorMajor, nil)
	d.cluster0Data = d.cluster.BoundVolumeDir(d.r, serviceNamespace, "assisted-service")
	u, err := url.Parse(d.cluster0DB)
	if err != nil {
		return err
	}
	pass, _ := u.User.Password()
	d.secrets["cluster 0 database password"] = pass
	u.User = url.User(u.User.Username())
	s.say("cluster 0's database, served as the operator's postgres container serves it: %s (password from Secret postgres)", u)
	s.say("cluster 0's file storage: %s (the node's volume of PVC %s/assisted-service)", d.cluster0Data, serviceNamespace)
	return nil
}
