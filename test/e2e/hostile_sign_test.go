package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// The hostile-bundle corpus, authenticity class (issue 17): bundles an
// attacker can make who can push to the registry tag and knows the public age
// recipient, but not node 0's signing key. Each is refused with exit code 9
// before anything of the bundle is read, by bundle verify, bundle extract and
// restore, and leaves nothing behind: no table, no file in or beside the data
// directory, no journal ConfigMap or Secret on cluster 0.

// signCase is one crafted bundle and the flags of the refusing command.
type signCase struct {
	name string
	ref  string
	// args are the signature flags given (--signer ..., or none).
	args []string
	// want is part of the message.
	want string
}

// refusedEverywhere runs verify, extract and restore on c and checks exit 9,
// the message, and zero effect.
func refusedEverywhere(t *testing.T, p *harness.Plugin, k *harness.Kube, identity string, reg []string, c signCase) {
	t.Helper()
	common := append(append([]string{}, c.args...), reg...)
	common = append(common, "--identity", identity)
	check := func(what string, r harness.Result) {
		t.Helper()
		if r.ExitCode != 9 || !strings.Contains(r.Stderr, c.want) {
			t.Fatalf("%s %s: exit %d, want 9 with %q\n%s", what, c.name, r.ExitCode, c.want, r.Combined())
		}
	}
	check("verify", p.Run(t, append([]string{"bundle", "verify", c.ref}, common...)...))

	parent := t.TempDir()
	check("extract", p.Run(t, append([]string{"bundle", "extract", c.ref, "--dir", filepath.Join(parent, "out")}, common...)...))
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Fatalf("extract %s left %v behind", c.name, entries)
	}

	if k == nil {
		return
	}
	ns := k.Namespace(t)
	db := emptyDatabase(t)
	dataParent := t.TempDir()
	dataDir := filepath.Join(dataParent, "data")
	secretsBefore := secretNames(t, k, ns)
	args := append([]string{"restore", c.ref, "--db", db.URL, "--data-dir", dataDir,
		"--kubeconfig", k.KubeconfigFor(t, harness.AdminUser, ns), "-n", ns}, common...)
	check("restore", p.Run(t, args...))
	for _, dry := range []string{"--dry-run=client", "--dry-run=server"} {
		check("restore "+dry, p.Run(t, append(args, dry)...))
	}
	if n := userTables(t, db.URL); n != 0 {
		t.Errorf("restore %s: %d tables in the target database", c.name, n)
	}
	if entries, _ := os.ReadDir(dataParent); len(entries) != 0 {
		t.Errorf("restore %s: wrote %v beside the data directory", c.name, entries)
	}
	if cms := journalConfigMaps(t, k, ns); len(cms) != 0 {
		t.Errorf("restore %s: journal %v", c.name, cms)
	}
	if after := secretNames(t, k, ns); strings.Join(after, ",") != strings.Join(secretsBefore, ",") {
		t.Errorf("restore %s: Secrets %v, before %v", c.name, after, secretsBefore)
	}
}

// TestHostileSign_Registry: node 0 pushes a signed bundle; an attacker
// pushes over its tag (1) a bundle made with only the public recipient,
// (2) the same signed with the attacker's own key, (3) with node 0's old
// signature re-tagged onto it. A reader that trusts node 0's key refuses
// all three, with or without --signer; the genuine bundle still restores.
//
// On olareg (the referrers API) and on Debian's docker-registry
// (distribution 2.8: no referrers API, so oras-go keeps the referrers tag
// schema's index, and the cosign tag).
func TestHostileSign_Registry(t *testing.T) {
	testHostileRegistry(t, harness.StartInProcessRegistry(t))
}

func TestHostileSign_DockerRegistry(t *testing.T) {
	testHostileRegistry(t, harness.StartDockerRegistry(t, harness.DockerRegistryOptions{}))
}

func testHostileRegistry(t *testing.T, reg *harness.Registry) {
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	attackerKey, attackerPub := signingKeyPair(t, t.TempDir(), "ed25519")
	data := assistedData(t, "node0-kubeadmin")
	ref := reg.Ref("assisted/node0", "v1")
	regArgs := registryArgs(reg)

	genuine := parseCreate(t, p.MustRun(t, append([]string{"bundle", "create", "--to", ref, "--data-dir", data,
		"--recipient", recipient, "--signing-key", signingKeyFile(t), "-o", "json"}, regArgs...)...).Stdout)
	pinned := reg.Host + "/assisted/node0@" + genuine.Digest
	p.MustRun(t, append([]string{"bundle", "verify", pinned, "--signer", signerFile(t), "--identity", identity}, regArgs...)...)
	oldSig := fetchManifest(t, reg, "sha256-"+strings.TrimPrefix(genuine.Digest, "sha256:")+".sig")

	// The attacker's files: a planted marker that must never land anywhere.
	evil := t.TempDir()
	if err := os.MkdirAll(filepath.Join(evil, bundleClusterID), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, bundleClusterID, "kubeadmin-password"), []byte("attacker-chosen"), 0o600); err != nil {
		t.Fatal(err)
	}
	forge := func(extra ...string) string {
		t.Helper()
		res := parseCreate(t, p.MustRun(t, append(append([]string{"bundle", "create", "--to", ref, "--data-dir", evil,
			"--recipient", recipient, "-o", "json"}, extra...), regArgs...)...).Stdout)
		if res.Digest == genuine.Digest {
			t.Fatal("the forged bundle has the genuine digest")
		}
		return res.Digest
	}
	k := harness.SharedKube(t)

	forge()
	refusedEverywhere(t, p, k, identity, regArgs, signCase{name: "forged with the public recipient, unsigned", ref: ref,
		args: signerArgs(t), want: "not signed"})
	refusedEverywhere(t, p, k, identity, regArgs, signCase{name: "forged, no --signer", ref: ref, want: "not signed"})

	forge("--signing-key", attackerKey)
	refusedEverywhere(t, p, k, identity, regArgs, signCase{name: "forged and signed by the attacker", ref: ref,
		args: signerArgs(t), want: "not signed by a trusted key"})
	refusedEverywhere(t, p, k, identity, regArgs, signCase{name: "signed by a key only inspect knows", ref: ref,
		want: "no trusted signer given"})

	forged := forge()
	pushManifest(t, reg, "sha256-"+strings.TrimPrefix(forged, "sha256:")+".sig", oldSig)
	refusedEverywhere(t, p, k, identity, regArgs, signCase{name: "forged with node 0's signature re-tagged onto it", ref: ref,
		args: signerArgs(t), want: "names another manifest"})

	// Trusting the attacker's key is the user's choice: then it is accepted.
	forge("--signing-key", attackerKey)
	p.MustRun(t, append([]string{"bundle", "verify", ref, "--signer", attackerPub, "--identity", identity}, regArgs...)...)

	// The genuine bundle, pinned by digest, still verifies with its signer and
	// is refused with the attacker's.
	p.MustRun(t, append([]string{"bundle", "verify", pinned, "--signer", signerFile(t), "--identity", identity}, regArgs...)...)
	refusedEverywhere(t, p, nil, identity, regArgs, signCase{name: "genuine, wrong signer", ref: pinned,
		args: []string{"--signer", attackerPub}, want: "not signed by a trusted key"})

	// inspect shows who signed what, and says it is not verified without --signer.
	ins := p.MustRun(t, append([]string{"bundle", "inspect", pinned, "-o", "json"}, regArgs...)...).Stdout
	var got struct {
		Signature struct {
			Verified bool     `json:"verified"`
			Found    []string `json:"found"`
		} `json:"signature"`
	}
	if err := json.Unmarshal([]byte(ins), &got); err != nil || got.Signature.Verified || len(got.Signature.Found) != 1 || got.Signature.Found[0] != fingerprintOf(t, signerFile(t)) {
		t.Fatalf("inspect: %v\n%s", err, ins)
	}
	human := p.MustRun(t, append([]string{"bundle", "inspect", pinned, "--signer", signerFile(t)}, regArgs...)...).Stdout
	if !strings.Contains(human, "Signature:      verified, signed by "+fingerprintOf(t, signerFile(t))) {
		t.Fatalf("inspect --signer:\n%s", human)
	}
}

// TestHostileSign_Layout: the same attacks on an OCI layout, where they are
// edits of index.json and the blobs: a tampered signature, a signature moved
// to another bundle, an unsigned bundle whose layer blobs are gone (9, not 8:
// nothing but the signature is read first), and a P-256 signer.
func TestHostileSign_Layout(t *testing.T) {
	p := harness.NewPlugin(t)
	identity, recipient := ageKey(t)
	data := assistedData(t, "node0-kubeadmin")
	k := harness.SharedKube(t)

	// A genuine bundle signed with a P-256 key made by openssl.
	p256Key, p256Pub := signingKeyPair(t, t.TempDir(), "p256")
	dir := filepath.Join(t.TempDir(), "layout")
	ref := "oci:" + dir + ":v1"
	res := parseCreate(t, p.MustRun(t, "bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient,
		"--signing-key", p256Key, "-o", "json").Stdout)
	out := filepath.Join(t.TempDir(), "out")
	p.MustRun(t, "bundle", "extract", ref, "--signer", p256Pub, "--signer", signerFile(t), "--identity", identity, "--dir", out)
	assertExtracted(t, data, filepath.Join(out, "files"))
	refusedEverywhere(t, p, nil, identity, nil, signCase{name: "P-256 bundle, ed25519 signer", ref: ref,
		args: signerArgs(t), want: "not signed by a trusted key"})

	// A flipped bit in the signature annotation: the signature manifest is
	// rewritten with its digest recomputed, as an attacker would.
	idx := readIndex(t, dir)
	sigTag := "sha256-" + strings.TrimPrefix(res.Digest, "sha256:") + ".sig"
	sigDesc := idx.find(t, sigTag)
	sigRaw := readBlob(t, dir, sigDesc.Digest)
	var sm map[string]any
	if err := json.Unmarshal(sigRaw, &sm); err != nil {
		t.Fatal(err)
	}
	layer := sm["layers"].([]any)[0].(map[string]any)
	ann := layer["annotations"].(map[string]any)
	raw, err := base64.StdEncoding.DecodeString(ann["dev.cosignproject.cosign/signature"].(string))
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x01
	ann["dev.cosignproject.cosign/signature"] = base64.StdEncoding.EncodeToString(raw)
	tampered, _ := json.Marshal(sm)
	idx.retag(t, dir, sigTag, writeBlob(t, dir, tampered), int64(len(tampered)))
	refusedEverywhere(t, p, k, identity, nil, signCase{name: "tampered signature", ref: ref,
		args: []string{"--signer", p256Pub}, want: "signature does not verify"})
	idx.retag(t, dir, sigTag, sigDesc.Digest, sigDesc.Size) // undo

	// Another bundle in the same layout, unsigned; node 0's signature moved
	// onto it (tagged for its digest).
	other := filepath.Join(t.TempDir(), "other")
	o := parseCreate(t, p.MustRun(t, "bundle", "create", "--to", "oci:"+other+":v1", "--data-dir", data, "--recipient", recipient, "-o", "json").Stdout)
	copyLayoutBlobs(t, other, dir)
	oidx := readIndex(t, other)
	idx = readIndex(t, dir)
	idx.add(t, dir, "evil", oidx.find(t, "v1"))
	idx.add(t, dir, "sha256-"+strings.TrimPrefix(o.Digest, "sha256:")+".sig", sigDesc)
	refusedEverywhere(t, p, k, identity, nil, signCase{name: "signature moved to another bundle", ref: "oci:" + dir + ":evil",
		args: []string{"--signer", p256Pub}, want: "names another manifest"})

	// An unsigned bundle with its layer blobs gone: the signature is checked
	// before anything else, so this is 9 (signature), not 8 (missing blob).
	gone := filepath.Join(t.TempDir(), "gone")
	g := parseCreate(t, p.MustRun(t, "bundle", "create", "--to", "oci:"+gone+":v1", "--data-dir", data, "--recipient", recipient, "-o", "json").Stdout)
	for _, l := range g.Layers {
		if err := os.Remove(blobPath(gone, l.Digest)); err != nil {
			t.Fatal(err)
		}
	}
	refusedEverywhere(t, p, k, identity, nil, signCase{name: "unsigned, layer blobs missing", ref: "oci:" + gone + ":v1",
		args: signerArgs(t), want: "not signed"})
	refusedEverywhere(t, p, nil, identity, nil, signCase{name: "unsigned, archive", ref: archiveOf(t, p, data, recipient),
		args: signerArgs(t), want: "not signed"})

	// Usage: the two flags contradict each other.
	if r := p.Run(t, "bundle", "verify", ref, "--signer", p256Pub, "--allow-unsigned"); r.ExitCode != 2 {
		t.Fatalf("--signer with --allow-unsigned: exit %d, want 2\n%s", r.ExitCode, r.Combined())
	}
	// A private key given as --signer is refused without quoting it.
	if r := p.Run(t, "bundle", "verify", ref, "--signer", p256Key); r.ExitCode != 2 || strings.Contains(r.Combined(), "PRIVATE KEY-----") {
		t.Fatalf("a private key as --signer: exit %d\n%s", r.ExitCode, r.Combined())
	}
}

// archiveOf makes an unsigned oci-archive bundle.
func archiveOf(t *testing.T, p *harness.Plugin, data, recipient string) string {
	t.Helper()
	ref := "oci-archive:" + filepath.Join(t.TempDir(), "b.tar") + ":v1"
	p.MustRun(t, "bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient)
	return ref
}
