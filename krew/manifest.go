package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// archive is one built release archive.
type archive struct {
	Platform platform
	Name     string // file name, also the last part of its download URL
	SHA256   string // lowercase hex
}

// manifestFor lists the archives of the platforms krew supports, each with the
// download URL that urlTemplate gives for it.
func manifestFor(version, urlTemplate string, archives []archive) (manifest, error) {
	m := manifest{Version: version, Homepage: homepage}
	for _, a := range archives {
		if !krewPlatforms[a.Platform] {
			continue
		}
		m.Platforms = append(m.Platforms, manifestPlatform{
			OS: a.Platform.OS, Arch: a.Platform.Arch, SHA256: a.SHA256, Bin: a.Platform.binName(),
			URI: strings.NewReplacer("{version}", version, "{archive}", a.Name).Replace(urlTemplate),
		})
	}
	if len(m.Platforms) == 0 {
		return m, fmt.Errorf("no platform that krew supports among the archives: the krew manifest would be empty")
	}
	return m, nil
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
