package plugin

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
)

// readRecipients parses --recipient values and --recipients-file files
// (age's format: one recipient per line, # comments).
func readRecipients(keys, files []string) ([]age.Recipient, error) {
	var out []age.Recipient
	for _, k := range keys {
		r, err := age.ParseX25519Recipient(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("--recipient %q: %w", k, err)
		}
		out = append(out, r)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("--recipients-file: %w", err)
		}
		rs, err := age.ParseRecipients(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("--recipients-file %s: %w", f, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// readIdentities parses --identity files (age identity files). Errors never
// quote the file's content: it is a private key.
func readIdentities(paths []string) ([]age.Identity, error) {
	var out []age.Identity
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("--identity: %w", err)
		}
		ids, err := age.ParseIdentities(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("--identity %s: not an age identity file", p)
		}
		out = append(out, ids...)
	}
	return out, nil
}

// parseCreated reads --created (RFC 3339 or Unix seconds), falling back to
// SOURCE_DATE_EPOCH; zero means "now".
func parseCreated(flag string) (time.Time, error) {
	v, what := flag, "--created"
	if v == "" {
		v, what = os.Getenv("SOURCE_DATE_EPOCH"), "SOURCE_DATE_EPOCH"
	}
	if v == "" {
		return time.Time{}, nil
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want RFC 3339 (2006-01-02T15:04:05Z) or Unix seconds", what, v)
	}
	return t.UTC(), nil
}
