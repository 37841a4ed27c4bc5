package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
)

// Images of the payload that a day-2 node runs (tag names in image-references).
const (
	ImageAssistedService = "agent-installer-api-server"
	ImageAgent           = "agent-installer-node-agent"
	ImageInstaller       = "agent-installer-orchestrator"
	ImageController      = "agent-installer-csr-approver"
	ImageUtils           = "agent-installer-utils"
	ImageMachineOS       = "machine-os-images"
)

// RequiredImages must be in the payload for a day-2 ISO.
var RequiredImages = []string{ImageAssistedService, ImageAgent, ImageInstaller, ImageController, ImageMachineOS}

const imageReferencesPath = "/release-manifests/image-references"

// ImageReferences maps payload image names to digest references.
type ImageReferences map[string]string

type imageStream struct {
	Kind string `json:"kind"`
	Spec struct {
		Tags []struct {
			Name string `json:"name"`
			From struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"from"`
		} `json:"tags"`
	} `json:"spec"`
}

// Payload is a resolved release image.
type Payload struct {
	// Ref is the reference that was read (a mirror or the release image itself).
	Ref    string
	Images ImageReferences
}

// ReadPayload reads image-references from the release image for arch (RPM
// name) and checks that the day-2 images are there.
func (c *Client) ReadPayload(ctx context.Context, releaseImage, arch string) (*Payload, error) {
	img, err := c.resolve(ctx, releaseImage, clusterinfo.GoArch(arch))
	if err != nil {
		return nil, fmt.Errorf("release image %s: %w", releaseImage, err)
	}
	rc, size, err := img.openFile(ctx, imageReferencesPath)
	if err != nil {
		return nil, fmt.Errorf("release image %s: %w", releaseImage, err)
	}
	defer rc.Close()
	if size > 16<<20 {
		return nil, fmt.Errorf("release image %s: image-references of %d bytes is implausible", releaseImage, size)
	}
	raw, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("release image %s: %w", releaseImage, err)
	}
	var is imageStream
	if err := json.Unmarshal(raw, &is); err != nil || is.Kind != "ImageStream" {
		return nil, fmt.Errorf("release image %s: image-references is not an ImageStream", releaseImage)
	}
	p := &Payload{Ref: img.ref, Images: ImageReferences{}}
	for _, t := range is.Spec.Tags {
		if t.From.Kind == "DockerImage" && t.From.Name != "" {
			p.Images[t.Name] = t.From.Name
		}
	}
	var missing []string
	for _, n := range RequiredImages {
		if p.Images[n] == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("release image %s has no %v in its image-references: is it an OpenShift 4.14+ payload?", releaseImage, missing)
	}
	return p, nil
}

// BaseISO is the live ISO streamed out of machine-os-images.
type BaseISO struct {
	io.ReadCloser
	Size int64
	// Ref is the machine-os-images reference that was read (maybe a mirror).
	Ref string
}

// OpenBaseISO streams /coreos/coreos-<arch>.iso out of the payload's
// machine-os-images image.
func (c *Client) OpenBaseISO(ctx context.Context, p *Payload, arch string) (*BaseISO, error) {
	ref := p.Images[ImageMachineOS]
	img, err := c.resolve(ctx, ref, clusterinfo.GoArch(arch))
	if err != nil {
		return nil, fmt.Errorf("machine-os-images %s: %w", ref, err)
	}
	file := fmt.Sprintf("/coreos/coreos-%s.iso", arch)
	rc, size, err := img.openFile(ctx, file)
	if errors.Is(err, ErrFileNotFound) {
		return nil, fmt.Errorf("base ISO for %s not found in release image (no %s in machine-os-images), check release image architecture", arch, file)
	}
	if err != nil {
		return nil, fmt.Errorf("machine-os-images %s: %w", ref, err)
	}
	return &BaseISO{ReadCloser: rc, Size: size, Ref: img.ref}, nil
}
