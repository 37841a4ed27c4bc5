package fakehost

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The fake follows the swagger spec: every response it sends is checked by the
// spec validator (a violation fails the test), and the validator itself
// catches violations.
func TestAssistedFollowsSwagger(t *testing.T) {
	a := StartAssisted(t, net.JoinHostPort(LoopbackIP().String(), "0"), "tok-watch")
	a.Update(func(h *Host) {
		h.Status, h.StatusInfo, h.RequestedHostname = "insufficient", "Host cannot be installed", "extra-worker-0"
		h.Validations = map[string][]Validation{"network": {{ID: "ntp-synced", Status: "failure", Message: "Host couldn't synchronize with any NTP server"}}}
		h.Stage, h.Percentage = "Writing image to disk", 16
	})
	get := func(path, token string) (int, any) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+a.Addr+BasePath+path, nil)
		if token != "" {
			req.Header.Set("Watcher-Authorization", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	if code, _ := get("/infra-envs", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d, want 401", code)
	}
	code, clusters := get("/clusters", "tok-watch")
	if code != http.StatusOK {
		t.Fatalf("/clusters: %d", code)
	}
	id := clusters.([]any)[0].(map[string]any)["id"].(string)
	code, cl := get("/clusters/"+id, "tok-watch")
	if code != http.StatusOK {
		t.Fatalf("/clusters/id: %d", code)
	}
	host := cl.(map[string]any)["hosts"].([]any)[0].(map[string]any)
	if !strings.Contains(host["validations_info"].(string), "ntp-synced") || host["progress"].(map[string]any)["installation_percentage"] != 16.0 {
		t.Fatalf("host record: %v", host)
	}

	s, err := LoadSwagger()
	if err != nil {
		t.Fatal(err)
	}
	host["status"] = "rebooting-now"
	host["made_up"] = true
	delete(host, "href")
	errs := strings.Join(s.Validate("host", host), "\n")
	for _, want := range []string{`rebooting-now is not one of`, `property "made_up" is not in the spec`, `required property "href" missing`} {
		if !strings.Contains(errs, want) {
			t.Errorf("validator missed %q; got:\n%s", want, errs)
		}
	}
}
