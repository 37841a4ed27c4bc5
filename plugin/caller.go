package plugin

import (
	"os"
	"path/filepath"
	"strings"
)

// CallerName returns "oc" when the plugin runs as an oc plugin and "kubectl"
// otherwise, so help and error messages name the command the user typed.
func CallerName() string { return callerName(os.Getenv, os.Args[0]) }

// callerName decides from the environment and argv[0]. kubectl and oc exec a
// plugin with their own environment and argv[0] set to the plugin's path, and
// say nothing about themselves, so it looks, in order, at:
//  1. KUBECTL_PLUGINS_CALLER, the caller's path in the old plugin mechanism
//     (and an explicit override);
//  2. argv[0]: oc looks for oc-assisted before kubectl-assisted, so a binary
//     installed or linked as oc-assisted runs under oc;
//  3. "_", which bash and zsh set to the path of the command they start: it is
//     .../oc when the user typed `oc assisted`, and oc passes it on.
func callerName(getenv func(string) string, arg0 string) string {
	if c := getenv("KUBECTL_PLUGINS_CALLER"); c != "" {
		if isOC(c) {
			return "oc"
		}
		return "kubectl"
	}
	if isOC(arg0) || isOC(getenv("_")) {
		return "oc"
	}
	return "kubectl"
}

// isOC reports whether path names oc (oc, oc.exe) or an oc plugin (oc-assisted).
func isOC(path string) bool {
	base := strings.TrimSuffix(filepath.Base(path), ".exe")
	return base == "oc" || strings.HasPrefix(base, "oc-")
}
