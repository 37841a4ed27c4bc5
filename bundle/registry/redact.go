package registry

import (
	"encoding/base64"
	"errors"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// Redacted replaces what must not be shown.
const Redacted = "<redacted>"

// uploadsPath is the part of a blob upload URL that precedes the session
// (OCI distribution-spec: POST /v2/<name>/blobs/uploads/ answers with a
// Location under it).
const uploadsPath = "/blobs/uploads/"

var (
	reURL    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>\x60]+`) })
	reUpload = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/blobs/uploads/[^\s"'<>\x60]+`) })
	reState  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(_state|state|token|access_token|refresh_token|password|signature|x-amz-signature|x-amz-credential|sig)=[^\s&"'<>\x60]+`)
	})
	reAuthHdr = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b(basic|bearer)\s+[A-Za-z0-9._~+/=-]{20,}`) })
	reJSONSec = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)"(token|access_token|refresh_token|identitytoken|registrytoken|password|auth)"\s*:\s*"[^"]*"`)
	})
)

// minSecret is the shortest credential replaced by value: shorter ones would
// redact ordinary words.
const minSecret = 4

// maxSecrets bounds the remembered secrets (tokens are refreshed over a long
// upload).
const maxSecrets = 4096

var secrets = struct {
	sync.RWMutex
	set map[string]struct{}
}{set: map[string]struct{}{}}

// remember records the secrets of a credential this process uses, so that
// Redact removes them wherever they show up.
func remember(c auth.Credential) {
	rememberSecret(c.Password, c.RefreshToken, c.AccessToken)
	if c.Username != "" && c.Password != "" {
		rememberSecret(base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password)))
	}
}

func rememberSecret(values ...string) {
	secrets.Lock()
	defer secrets.Unlock()
	for _, v := range values {
		if len(v) < minSecret || len(secrets.set) >= maxSecrets {
			continue
		}
		secrets.set[v] = struct{}{}
	}
}

// RedactURL returns u without user information, with its query replaced by
// "<redacted>" and, for a blob upload location, its session (the path after
// /blobs/uploads/) replaced too. A string that does not parse as a URL is
// redacted whole but for its scheme.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		if i := strings.Index(u, "://"); i > 0 {
			return u[:i+3] + Redacted
		}
		return Redacted
	}
	var b strings.Builder
	b.WriteString(p.Scheme)
	b.WriteString("://")
	b.WriteString(p.Host)
	path := p.EscapedPath()
	if i := strings.Index(path, uploadsPath); i >= 0 && len(path) > i+len(uploadsPath) {
		path = path[:i+len(uploadsPath)] + Redacted
	}
	b.WriteString(path)
	if p.RawQuery != "" || p.ForceQuery {
		b.WriteString("?" + Redacted)
	}
	return b.String()
}

// RedactText redacts URLs (see RedactURL), relative upload locations,
// secret-looking query parameters, Authorization values, secret JSON fields
// and every credential or token this process has used, in s.
func RedactText(s string) string {
	s = reURL().ReplaceAllStringFunc(s, func(u string) string {
		// Punctuation after an unquoted URL ("GET https://h/x?q: 401") is
		// the message's, not the URL's.
		trimmed := strings.TrimRight(u, ":,.;)]")
		return RedactURL(trimmed) + u[len(trimmed):]
	})
	s = reUpload().ReplaceAllString(s, uploadsPath+Redacted)
	s = reState().ReplaceAllString(s, "${1}="+Redacted)
	s = reAuthHdr().ReplaceAllString(s, "${1} "+Redacted)
	s = reJSONSec().ReplaceAllString(s, `"${1}":"`+Redacted+`"`)
	secrets.RLock()
	known := make([]string, 0, len(secrets.set))
	for v := range secrets.set {
		known = append(known, v)
	}
	secrets.RUnlock()
	// Longest first: a secret that contains another goes whole.
	sort.Slice(known, func(i, j int) bool { return len(known[i]) > len(known[j]) })
	for _, v := range known {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}

// redactedError shows a redacted message but keeps the original in its
// chain, for errors.Is (not found, cancelled, ...).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Redact returns err with a redacted message (see RedactText); nil for nil.
// errors.Is and errors.As still see the errors it wraps; a *url.Error among
// them has its URL redacted in place.
func Redact(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = RedactURL(ue.URL)
	}
	msg := RedactText(err.Error())
	if r, ok := err.(*redactedError); ok && r.msg == msg {
		return r
	}
	return &redactedError{msg: msg, err: err}
}
