package oauth_test

import (
	"context"
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
