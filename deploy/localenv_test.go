package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalEnvOwnCheckout checks that deploy/local/env.sh, sourced in a shell
// that sourced another checkout's env.sh, points at its own checkout: a clone
// tested from such a shell once installed nothing into its .bin and failed
// the tests that exec it. A path a person set to something else is kept.
func TestLocalEnvOwnCheckout(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	src, err := os.ReadFile(filepath.Join(root, "deploy", "local", "env.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	checkout := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(d, "deploy", "local"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "deploy", "local", "env.sh"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := checkout("a"), checkout("b")
	for _, tc := range []struct {
		name, pre, want string
	}{
		{"inherited", "", b + " " + b + "/.bin " + b + "/.stack"},
		{"set by a person", "export LAKEPIPE_BIN=/opt/bin;", b + " /opt/bin " + b + "/.stack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := "set -euo pipefail; " + tc.pre + " . " + a + "/deploy/local/env.sh; " +
				"bash -c 'set -euo pipefail; . " + b + "/deploy/local/env.sh; echo $LAKEPIPE_ROOT $LAKEPIPE_BIN $LAKEPIPE_STATE'"
			cmd := exec.Command("bash", "-c", script)
			cmd.Env = cleanEnv()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// cleanEnv is this process's environment without the stack's paths, which a
// developer's shell may carry.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LAKEPIPE_ROOT=") || strings.HasPrefix(kv, "LAKEPIPE_BIN=") || strings.HasPrefix(kv, "LAKEPIPE_STATE=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
