package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// LoopbackRedirect receives the authorization server's redirect on a loopback port, for
// command-line clients of the authorization code grant (RFC 8252 Section 7.3):
//
//	lr, err := oauth.NewLoopbackRedirect("/callback")
//	...
//	defer lr.Close()
//	c := runtime.NewClient(url, oauth.WithOAuth(oauth.Config{
//		RedirectURL: lr.RedirectURL(),
//		Authorize:   lr.Authorize(func(u string) error { fmt.Println("Open", u); return nil }),
//	}))
type LoopbackRedirect struct {
	ln       net.Listener
	srv      *http.Server
	path     string
	redirect string
	done     chan struct{}
	got      chan *url.URL
}

// NewLoopbackRedirect listens on a free port of 127.0.0.1 for redirects to path.
func NewLoopbackRedirect(path string) (*LoopbackRedirect, error) {
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcp: loopback redirect: %w", err)
	}
	lr := &LoopbackRedirect{
		ln: ln, path: path, redirect: "http://" + ln.Addr().String() + path,
		done: make(chan struct{}), got: make(chan *url.URL, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc(path, lr.serve)
	lr.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(lr.done)
		_ = lr.srv.Serve(ln)
	}()
	return lr, nil
}

// RedirectURL returns the redirect URI to register and send: http://127.0.0.1:PORT/path.
func (lr *LoopbackRedirect) RedirectURL() string { return lr.redirect }

func (lr *LoopbackRedirect) serve(w http.ResponseWriter, r *http.Request) {
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	select {
	case lr.got <- &u:
	default: // a redirect nobody waits for
	}
	// The page says nothing of the response's error: it is shown only once the client has
	// checked the response's iss, which a mixed-up response fails (spec 2026-07-28,
	// Authorization, Authorization Response Validation: no error of a mismatched response is
	// displayed).
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = fmt.Fprint(w, "<!doctype html><title>MCP authorization</title><p>Authorization complete: you can close this window and return to the application, which tells the outcome.</p>")
}

// Authorize returns an Config.Authorize that calls open with the authorization URL (to
// launch a browser or print the URL) and waits, within ctx, for the redirect.
func (lr *LoopbackRedirect) Authorize(open func(authURL string) error) func(ctx context.Context, authURL string) (*url.URL, error) {
	return func(ctx context.Context, authURL string) (*url.URL, error) {
		// Forget a redirect left over from an abandoned attempt.
		select {
		case <-lr.got:
		default:
		}
		if err := open(authURL); err != nil {
			return nil, err
		}
		select {
		case u := <-lr.got:
			return u, nil
		case <-lr.done:
			return nil, errors.New("the loopback redirect listener is closed")
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the authorization redirect: %w", ctx.Err())
		}
	}
}

// Close stops listening.
func (lr *LoopbackRedirect) Close() error {
	err := lr.srv.Close()
	<-lr.done
	return err
}
