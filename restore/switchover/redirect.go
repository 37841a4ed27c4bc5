package switchover

import (
	"net/http"
	"net/url"
	"strings"
)

// Redirector answers every request with a 307 to the same path and query under
// Target, so clients that still call node 0's address (the UI, `openshift-install
// agent wait-for`) follow the service to cluster 0. 307 keeps the method and body.
type Redirector struct {
	Target *url.URL
	// OnRedirect, when set, is told about each redirected request.
	OnRedirect func(r *http.Request, location string)
}

// ServeHTTP implements http.Handler.
func (h *Redirector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	loc := *h.Target
	loc.Path = strings.TrimSuffix(h.Target.Path, "/") + r.URL.Path
	loc.RawPath = ""
	loc.RawQuery = r.URL.RawQuery
	if h.OnRedirect != nil {
		h.OnRedirect(r, loc.String())
	}
	http.Redirect(w, r, loc.String(), http.StatusTemporaryRedirect)
}
