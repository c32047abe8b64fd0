package runtime_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreLinksNoOAuthClient: a program that imports runtime (a server, say) links no OAuth
// client library and no JOSE library. The client flows live in runtime/oauth and the JWT
// verifier in jwtauth; only the packages that need them import them.
func TestCoreLinksNoOAuthClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		require.NoError(t, err, "go list: %s", ee.Stderr)
	}
	require.NoError(t, err, "go list")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/protomcp/protomcp/runtime", "go list -deps lists the package itself")
	require.Contains(t, deps, "net/http", "go list -deps lists the standard library")
	for _, forbidden := range []string{"golang.org/x/oauth2", "github.com/go-jose/go-jose"} {
		for _, d := range deps {
			assert.False(t, d == forbidden || strings.HasPrefix(d, forbidden+"/"),
				"runtime links %s: OAuth client flows belong in runtime/oauth, JOSE in jwtauth", d)
		}
	}
}
