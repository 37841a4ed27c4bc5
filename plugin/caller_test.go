package plugin

import "testing"

func TestCallerName(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		arg0 string
		want string
	}{
		{name: "kubectl from bash", env: map[string]string{"_": "/usr/bin/kubectl"}, arg0: "/home/u/.krew/bin/kubectl-assisted", want: "kubectl"},
		{name: "oc from bash", env: map[string]string{"_": "/usr/local/bin/oc"}, arg0: "/home/u/.krew/bin/kubectl-assisted", want: "oc"},
		{name: "oc.exe from git bash", env: map[string]string{"_": "/c/tools/oc.exe"}, arg0: "kubectl-assisted.exe", want: "oc"},
		{name: "linked as oc-assisted", env: map[string]string{"_": "/usr/bin/oc"}, arg0: "/usr/local/bin/oc-assisted", want: "oc"},
		{name: "oc-assisted from a shell without _", arg0: "oc-assisted", want: "oc"},
		{name: "run directly", env: map[string]string{"_": "/usr/local/bin/kubectl-assisted"}, arg0: "/usr/local/bin/kubectl-assisted", want: "kubectl"},
		{name: "no hints", arg0: "kubectl-assisted", want: "kubectl"},
		{name: "a tool merely starting with oc", env: map[string]string{"_": "/usr/bin/octave"}, arg0: "kubectl-assisted", want: "kubectl"},
		{name: "old caller variable: oc", env: map[string]string{"KUBECTL_PLUGINS_CALLER": "/usr/bin/oc", "_": "/usr/bin/kubectl"}, arg0: "kubectl-assisted", want: "oc"},
		{name: "old caller variable wins over argv[0]", env: map[string]string{"KUBECTL_PLUGINS_CALLER": "/usr/bin/kubectl"}, arg0: "oc-assisted", want: "kubectl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			if got := callerName(getenv, tt.arg0); got != tt.want {
				t.Fatalf("callerName = %q, want %q", got, tt.want)
			}
		})
	}
}
