package oauth_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/internal/testissuer"
	"github.com/protomcp/protomcp/runtime"
	"github.com/protomcp/protomcp/runtime/oauth"
)

const jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// TestOAuthWorkloadIdentity: workload identity federation. The workload's platform writes a
// JWT for the authorization server to a file; the client presents it in the JWT bearer grant
// (RFC 7523) and the server sees the workload. A refused assertion is the call's error, with
// no retry and no other grant.
func TestOAuthWorkloadIdentity(t *testing.T) {
	ctx := testCtx(t)
	platform, err := testissuer.Start(testissuer.WithSubject("ci-job"))
	require.NoError(t, err)
	defer platform.Close()
	e := newAuthEnvWith(t, []testissuer.Option{testissuer.WithWorkloadIssuer(platform), testissuer.WithClient("workload", "s3cret")}, nil)
	path := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(path, []byte(platform.Mint(map[string]any{"aud": e.issuer.URL})+"\n"), 0o600))
	c := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantJWTBearer, ClientID: "workload", ClientSecret: "s3cret", JWTBearerAssertion: oauth.AssertionFile(path),
	}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "whoami", nil)
	require.NoError(t, err)
	require.Equal(t, "ci-job", resultText(t, res), "whoami")
	require.Equal(t, 1, e.issuer.TokenRequests(jwtBearer), "JWT bearer token requests")

	// An assertion for another audience is refused: the error says so, and the client
	// neither retries nor falls back to the authorization code grant.
	wrong := filepath.Join(t.TempDir(), "wrong")
	require.NoError(t, os.WriteFile(wrong, []byte(platform.Mint(map[string]any{"aud": "https://elsewhere.example.com"})), 0o600))
	bad := runtime.NewClient(e.url, oauth.WithOAuth(oauth.Config{
		Grant: oauth.GrantJWTBearer, ClientID: "workload", ClientSecret: "s3cret", JWTBearerAssertion: oauth.AssertionFile(wrong),
		RedirectURL: "http://127.0.0.1:1/callback", Authorize: headless,
	}))
	defer bad.Close(ctx)
	_, err = bad.CallTool(ctx, "whoami", nil)
	require.ErrorIs(t, err, oauth.ErrOAuth)
	assert.ErrorContains(t, err, "invalid_grant")
	var he *runtime.HTTPError
	require.ErrorAs(t, err, &he, "the server's refusal")
	assert.Equal(t, http.StatusUnauthorized, he.StatusCode, "the server's refusal")
	assert.Equal(t, 2, e.issuer.TokenRequests(jwtBearer), "JWT bearer token requests (one more, not retried)")
	assert.Zero(t, e.issuer.TokenRequests("authorization_code"), "authorization code token requests")
	assert.Empty(t, e.issuer.Registrations(), "registrations")

	// A missing file is an error before any request.
	_, err = oauth.AssertionFile(filepath.Join(t.TempDir(), "absent"))(ctx, nil, "")
	assert.ErrorIs(t, err, os.ErrNotExist)
}
