package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

//go:embed assisted.yaml.tmpl
var manifestTemplate string

// homepage is the project page; release assets live under its releases.
const homepage = "https://github.com/kubectl-assisted/kubectl-assisted"

// defaultURLTemplate is where a release's archives are downloaded from; {version}
// and {archive} are filled per platform.
const defaultURLTemplate = homepage + "/releases/download/{version}/{archive}"

// manifest is what the krew manifest template is rendered from.
type manifest struct {
	Version   string
	Homepage  string
	Platforms []manifestPlatform
}

// manifestPlatform is one spec.platforms entry.
type manifestPlatform struct {
	OS, Arch string
	URI      string
	SHA256   string // lowercase hex, as krew requires
	Bin      string // the executable inside the archive, linked as kubectl-assisted
}

func renderManifest(m manifest) ([]byte, error) {
	t, err := template.New("assisted.yaml").Option("missingkey=error").Parse(manifestTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, m); err != nil {
		return nil, fmt.Errorf("render krew manifest: %w", err)
	}
	return b.Bytes(), nil
}

// writeFileAtomic writes data to path via a temp file and a rename, so a
// reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
