package ignition

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
)

// Profile is what differs between the OpenShift versions a node ISO can join:
// the on-host assisted-service and its client are the release's own, so the
// ISO must speak their version's auth.
type Profile struct {
	// Minor is the 4.x minor version.
	Minor int
	// Tokens is the kind of auth tokens the release's assisted-service takes.
	Tokens authtoken.Kind
	// TokenInRendezvousEnv puts USER_AUTH_TOKEN into rendezvous-host.env
	// as well (4.18+ installer), not only into assisted-service.env.
	TokenInRendezvousEnv bool
}

// Supported OpenShift minor versions (4.x).
const (
	MinMinor = 17
	MaxMinor = 20
)

// ProfileFor returns the profile of an OpenShift version ("4.18.3").
func ProfileFor(version string) (Profile, error) {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 || parts[0] != "4" {
		return Profile{}, fmt.Errorf("OpenShift version %q: add-nodes supports 4.%d to 4.%d", version, MinMinor, MaxMinor)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < MinMinor || minor > MaxMinor {
		return Profile{}, fmt.Errorf("OpenShift version %q: add-nodes supports 4.%d to 4.%d (the ISO must speak the auth of the cluster's own assisted-service, which is known for those releases only)", version, MinMinor, MaxMinor)
	}
	p := Profile{Minor: minor, Tokens: authtoken.KindPerScheme, TokenInRendezvousEnv: true}
	if minor == 17 {
		p.Tokens, p.TokenInRendezvousEnv = authtoken.KindSingle, false
	}
	return p, nil
}
