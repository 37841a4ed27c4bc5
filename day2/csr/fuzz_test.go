package csr

import (
	"encoding/pem"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// FuzzEvaluate feeds arbitrary request bytes, requesters and usages to the
// rules: a CSR is attacker input, so they must never panic, and a request that
// cannot be parsed is never approved.
func FuzzEvaluate(f *testing.F) {
	seed := build(f, "seed", clientSpec("extra-worker-0"))
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: seed.Parsed.Raw}), BootstrapperUser, "digital signature,client auth", SignerClient)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), "system:node:extra-worker-0", "server auth", SignerServing)
	f.Add([]byte{}, "", "", "")
	f.Fuzz(func(t *testing.T, req []byte, user, usages, signer string) {
		obj := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: req, Username: user, SignerName: signer,
			Groups: []string{"system:nodes", bootstrapperGroup},
		}}
		for _, u := range strings.Split(usages, ",") {
			obj.Spec.Usages = append(obj.Spec.Usages, certificatesv1.KeyUsage(u))
		}
		r := FromAPI(obj)
		d := Evaluate(r, hosts, Facts{})
		if d.Approve && r.ParseErr != nil {
			t.Fatalf("approved an unparsable request: %v", r.ParseErr)
		}
		if d.Approve && len(d.Reasons) > 0 {
			t.Fatalf("approved with reasons %q", d.Reasons)
		}
		_ = Review([]*Request{r, r}, hosts, Facts{})
	})
}
