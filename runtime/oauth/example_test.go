package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"log"
	"os"

	"github.com/protomcp/protomcp/runtime"
	"github.com/protomcp/protomcp/runtime/oauth"
)

// A service acting on its own behalf: the client_credentials grant with a secret. The first
// request's 401 starts discovery; the token is then sent with every request.
func ExampleWithOAuth() {
	c := runtime.NewClient("https://mcp.example.com/mcp", oauth.WithOAuth(oauth.Config{
		Grant:        oauth.GrantClientCredentials,
		ClientID:     "reporter",
		ClientSecret: os.Getenv("REPORTER_SECRET"),
	}))
	defer c.Close(context.Background())
	if err := c.Connect(context.Background()); err != nil {
		log.Fatal(err) // errors.Is(err, oauth.ErrOAuth) when authorization failed
	}
}

// A command-line tool acting for a user: the authorization code grant, with the browser's
// redirect received on a loopback port.
func ExampleNewLoopbackRedirect() {
	lr, err := oauth.NewLoopbackRedirect("/callback")
	if err != nil {
		log.Fatal(err)
	}
	defer lr.Close()
	c := runtime.NewClient("https://mcp.example.com/mcp", oauth.WithOAuth(oauth.Config{
		ClientName:  "weather cli",
		RedirectURL: lr.RedirectURL(),
		Authorize: lr.Authorize(func(authURL string) error {
			fmt.Fprintln(os.Stderr, "Open this URL to log in:", authURL)
			return nil
		}),
	}))
	defer c.Close(context.Background())
	if err := c.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// A workload (a CI job, a Kubernetes pod) authorized by workload identity federation: the
// platform's identity token for the authorization server is the JWT bearer grant, and the
// tokens are DPoP-bound to a key of the process, useless to anyone who copies them.
func ExampleAssertionFile() {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	c := runtime.NewClient("https://mcp.example.com/mcp", oauth.WithOAuth(oauth.Config{
		Grant:              oauth.GrantJWTBearer,
		ClientID:           "deploy-bot",
		JWTBearerAssertion: oauth.AssertionFile("/var/run/secrets/tokens/mcp-token"),
		DPoPKey:            key,
	}))
	defer c.Close(context.Background())
	if err := c.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}
}
