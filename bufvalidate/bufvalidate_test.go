package bufvalidate_test

import (
	"github.com/stretchr/testify/assert"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRuntimeLinksNoProtovalidate: a server whose protos use no buf.validate rules imports
// only package runtime, whose dependencies must not include protovalidate or CEL.
func TestRuntimeLinksNoProtovalidate(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/protomcp/protomcp/runtime").CombinedOutput()
	require.NoError(t, err, "go list:\n%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/protomcp/protomcp/runtime", "go list -deps lists the package itself")
	for _, dep := range deps {
		assert.Falsef(t, strings.HasPrefix(dep, "buf.build/") || strings.HasPrefix(dep, "cel.dev/") || strings.Contains(dep, "/bufvalidate"), "package runtime depends on %s", dep)
	}
}
