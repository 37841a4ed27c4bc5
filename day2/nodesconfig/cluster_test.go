package nodesconfig

import (
	"strings"
	"testing"
)

func TestValidateCluster(t *testing.T) {
	cluster := Cluster{Architecture: "x86_64", Nodes: []ExistingNode{
		{Name: "master-0", Addresses: []string{"192.168.122.20", "master-0.example.org"}},
		{Name: "worker-0", Addresses: []string{"192.168.122.30", "fd00::30"}},
	}}
	host := func(name, ip string) string {
		return `
- hostname: ` + name + `
  interfaces: [{name: eth0, macAddress: "00:00:00:00:00:0` + string(rune('1'+len(name)%8)) + `"}]
  networkConfig:
    interfaces:
    - name: eth0
      type: ethernet
      ipv4: {enabled: true, address: [{ip: ` + ip + `, prefix-length: 24}]}`
	}
	tests := []struct {
		name    string
		yaml    string
		cl      Cluster
		wantErr []string
	}{
		{"ok", "hosts:" + host("extra-worker-0", "192.168.122.40"), cluster, nil},
		{"existing hostname", "hosts:" + host("master-0", "192.168.122.40"), cluster,
			[]string{"host 0 (master-0): hostname conflict: master-0 is already used by the cluster's node master-0"}},
		{"existing hostname address", "hosts:" + host("master-0.example.org", "192.168.122.40"), cluster,
			[]string{"hostname conflict: master-0.example.org is already used by the cluster's node master-0"}},
		{"ip in use", "hosts:" + host("extra-worker-0", "192.168.122.30"), cluster,
			[]string{"host 0 (extra-worker-0): address conflict: 192.168.122.30 is already used by the cluster's node worker-0"}},
		{"both at once", "hosts:" + host("worker-0", "192.168.122.20"), cluster,
			[]string{"2 problems", "hostname conflict: worker-0", "address conflict: 192.168.122.20 is already used by the cluster's node master-0"}},
		{"arm64 on single-arch amd64", "cpuArchitecture: arm64\nhosts:" + host("a", "10.0.0.1"), cluster,
			[]string{"cpuArchitecture arm64 does not match the cluster's architecture x86_64: only a multi-architecture cluster can add aarch64 nodes"}},
		{"arm64 on multi-arch", "cpuArchitecture: arm64\nhosts:" + host("a", "10.0.0.1"), Cluster{Architecture: "x86_64", MultiArch: true}, nil},
		{"s390x on amd64", "cpuArchitecture: s390x\nhosts:" + host("a", "10.0.0.1"), Cluster{Architecture: "x86_64", MultiArch: true},
			[]string{"cpuArchitecture s390x cannot join a x86_64 cluster"}},
		{"x86_64 spelled amd64", "cpuArchitecture: amd64\nhosts:" + host("a", "10.0.0.1"), cluster, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			err = c.ValidateCluster(tt.cl)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestParse_UnknownFieldsNamedWithTheirPath(t *testing.T) {
	_, err := Parse(strings.NewReader(`hosts:
- interfaces: [{name: eth0, macAddress: "00:00:00:00:00:01", mtu: 9000}]
  rootDeviceHints: {serial: X, deviceName: /dev/sda}
sshkey: x
`))
	if err == nil {
		t.Fatal("unknown fields accepted")
	}
	for _, want := range []string{
		`unknown field "hosts[0].rootDeviceHints.serial": valid root device hints are deviceName, hctl, model, vendor, serialNumber, minSizeGigabytes, wwn, wwnWithExtension, wwnVendorExtension, rotational`,
		`unknown field "hosts[0].interfaces[0].mtu": valid fields are name, macAddress`,
		`unknown field "sshkey"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v\nwant %q", err, want)
		}
	}
}
