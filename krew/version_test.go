package main

import "testing"

func TestReleaseVersion(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "tag", in: "v1.2.3", want: "v1.2.3"},
		{name: "tag without v", in: "1.2.3", want: "v1.2.3"},
		{name: "describe past a tag", in: "v1.2.3-4-gabc1234-dirty", want: "v1.2.3-4-gabc1234-dirty"},
		{name: "pre-release and build", in: "v0.1.0-rc.1+build.5", want: "v0.1.0-rc.1+build.5"},
		{name: "bare hash", in: "e27ac8e", want: "v0.0.0-ge27ac8e"},
		{name: "all-digit hash keeps a valid identifier", in: "0123456", want: "v0.0.0-g0123456"},
		{name: "dirty hash", in: "e27ac8e-dirty", want: "v0.0.0-ge27ac8e-dirty"},
		{name: "surrounding space", in: " v2.0.0\n", want: "v2.0.0"},
		{name: "empty", in: "", wantErr: true},
		{name: "leading zero", in: "v01.2.3", wantErr: true},
		{name: "numeric pre-release with leading zero", in: "v1.2.3-01", wantErr: true},
		{name: "two parts", in: "v1.2", wantErr: true},
		{name: "word", in: "nightly", wantErr: true},
		{name: "path characters", in: "v1.2.3/../x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := releaseVersion(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("releaseVersion(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("releaseVersion(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePlatforms(t *testing.T) {
	ps, err := parsePlatforms("")
	if err != nil || len(ps) != 7 {
		t.Fatalf("default platforms = %v, %v; want the 7 release platforms", ps, err)
	}
	ps, err = parsePlatforms("linux/amd64, windows/amd64 linux/amd64")
	if err != nil || len(ps) != 2 || ps[0] != (platform{"linux", "amd64"}) || ps[1] != (platform{"windows", "amd64"}) {
		t.Fatalf("parsePlatforms = %v, %v; want linux/amd64 windows/amd64 once each, in order", ps, err)
	}
	for _, bad := range []string{"linux", "linux/", "/amd64"} {
		if _, err := parsePlatforms(bad); err == nil {
			t.Errorf("parsePlatforms(%q) succeeded", bad)
		}
	}
	if got := archiveName("v1.0.0", platform{"windows", "amd64"}); got != "kubectl-assisted_v1.0.0_windows_amd64.zip" {
		t.Errorf("windows archive = %s", got)
	}
	if got := archiveName("v1.0.0", platform{"darwin", "arm64"}); got != "kubectl-assisted_v1.0.0_darwin_arm64.tar.gz" {
		t.Errorf("darwin archive = %s", got)
	}
}

func TestBuildEnvPinsTheToolchainInputs(t *testing.T) {
	got := buildEnv([]string{"HOME=/h", "GOFLAGS=-race", "GOAMD64=v3", "CGO_ENABLED=1", "GOCACHE=/c"})
	want := []string{"HOME=/h", "GOCACHE=/c"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("buildEnv = %v, want %v", got, want)
	}
}
