package nodesconfig

import (
	"strings"
	"testing"
)

const good = `
cpuArchitecture: amd64
sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG5vZGVzY29uZmlndGVzdDAwMDAwMDAwMDAwMDAwMDAw test
hosts:
- hostname: extra-worker-0
  role: worker
  rootDeviceHints:
    deviceName: /dev/sda
  interfaces:
  - name: eth0
    macAddress: 00:F4:3D:A0:0E:2B
  networkConfig:
    interfaces:
    - name: eth0
      type: ethernet
      state: up
      mac-address: 00:f4:3d:a0:0e:2b
      ipv4:
        enabled: true
        address:
        - ip: 192.168.111.90
          prefix-length: 24
        dhcp: false
      ipv6:
        enabled: true
        address:
        - ip: fd00::5a
          prefix-length: 64
- hostname: extra-worker-1
  interfaces:
  - name: eth0
    macAddress: 00:f4:3d:a0:0e:2c
`

func TestParse_Valid(t *testing.T) {
	c, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	if got := c.Hosts[0].IPs(); strings.Join(got, ",") != "192.168.111.90,fd00::5a" {
		t.Fatalf("IPs() = %v", got)
	}
	if got := c.Hosts[0].MACs(); got[0] != "00:f4:3d:a0:0e:2b" {
		t.Fatalf("MACs() = %v", got)
	}
}

func TestParse_UnknownFieldNamed(t *testing.T) {
	_, err := Parse(strings.NewReader("hosts:\n- interfaces: []\n  rootDeviceHints:\n    deviceNmae: /dev/sda\n"))
	if err == nil || !strings.Contains(err.Error(), "deviceNmae") {
		t.Fatalf("Parse() error = %v, want it to name deviceNmae", err)
	}
}

func TestValidate_AllProblemsAtOnce(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"no hosts", "hosts: []", []string{"at least one host"}},
		{"duplicate MAC", "hosts:\n- interfaces: [{name: a, macAddress: '00:00:00:00:00:01'}]\n- interfaces: [{name: a, macAddress: '00:00:00:00:00:01'}]", []string{"duplicate MAC address 00:00:00:00:00:01"}},
		{"bad MAC and role", "hosts:\n- role: boss\n  interfaces: [{name: a, macAddress: '00-00-00-00-00-01'}]", []string{"malformed", `role "boss"`}},
		{"bad hostname", "hosts:\n- hostname: Bad_Name\n  interfaces: [{name: a, macAddress: '00:00:00:00:00:01'}]", []string{`hostname "Bad_Name"`}},
		{"no interfaces", "hosts:\n- hostname: a", []string{"at least one interface"}},
		{"wwn extension", "hosts:\n- interfaces: [{name: a, macAddress: '00:00:00:00:00:01'}]\n  rootDeviceHints: {wwnWithExtension: x}", []string{"WWN extensions"}},
		{"nmstate MAC mismatch", "hosts:\n- interfaces: [{name: a, macAddress: '00:00:00:00:00:01'}]\n  networkConfig:\n    interfaces: [{name: eth0, mac-address: '00:00:00:00:00:02'}]", []string{"not among the host's interfaces"}},
		{"nmstate bad ip", "hosts:\n- interfaces: [{name: a, macAddress: '00:00:00:00:00:01'}]\n  networkConfig:\n    interfaces: [{name: eth0, ipv4: {address: [{ip: 300.1.1.1}]}}]", []string{`"300.1.1.1" is not an IP`}},
		{"bad arch", "cpuArchitecture: mips\nhosts:\n- interfaces: [{name: a, macAddress: '00:00:00:00:00:01'}]", []string{`"mips" is not supported`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want problems")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// The installer validates sshKey as an SSH public key and root device hint
// HCTL as four numbers; both fail before any work here too.
func TestValidate_SSHKeyAndHCTL(t *testing.T) {
	c := &Config{SSHKey: "ssh-ed25519 not-base64 user", Hosts: []Host{{
		Interfaces:      []Interface{{Name: "eth0", MACAddress: "00:f4:3d:a0:0e:2b"}},
		RootDeviceHints: &RootDeviceHints{HCTL: "1:0:0"},
	}}}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "sshKey is not a valid SSH public key") || !strings.Contains(err.Error(), `hctl "1:0:0"`) {
		t.Fatalf("err = %v", err)
	}
	c.SSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG5vZGVzY29uZmlndGVzdDAwMDAwMDAwMDAwMDAwMDAw core@example"
	c.Hosts[0].RootDeviceHints.HCTL = "1:0:0:0"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
