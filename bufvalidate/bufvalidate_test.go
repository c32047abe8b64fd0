package bufvalidate_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeLinksNoProtovalidate: a server whose protos use no buf.validate rules imports
// only package runtime, whose dependencies must not include protovalidate or CEL.
func TestRuntimeLinksNoProtovalidate(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/protomcp/protomcp/runtime").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "buf.build/") || strings.HasPrefix(dep, "cel.dev/") || strings.Contains(dep, "/bufvalidate") {
			t.Errorf("package runtime depends on %s", dep)
		}
	}
}
