package runtime

import (
	"context"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client that sends its requests without http.Client.Do still follows a same-origin
// redirect with Do's policy, and sends each request once: the redirect it met is handed to
// Do, not asked for again.
func TestClientDirectTransportFollowsRedirectsOnce(t *testing.T) {
	ts := newTestServer(t)
	var old, moved atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		old.Add(1)
		http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		moved.Add(1)
		ts.srv.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()

	c := NewClient(hs.URL+"/old", WithEra(EraLegacy))
	defer closeClient(t, c)
	require.NotNil(t, c.direct, "a default client sends without http.Client.Do")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 {
		res, err := c.CallTool(ctx, "echo", []byte(`{"i":1}`))
		require.NoError(t, err, "call %d through the redirect", i)
		assert.Equal(t, `{"i":1}`, res.Text())
	}
	// initialize, notifications/initialized and three calls: each POSTed once to /old, and
	// once more where it was redirected.
	assert.Equal(t, int32(5), old.Load(), "requests to the old URL")
	assert.Equal(t, old.Load(), moved.Load(), "requests to the new URL")
}

// A request that cannot be sent fails with a *url.Error naming the method and the URL, as
// http.Client.Do's errors do.
func TestClientDirectTransportErrorIsURLError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	c := NewClient("http://"+addr+"/mcp", WithEra(EraLegacy))
	defer closeClient(t, c)
	require.NotNil(t, c.direct)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Connect(ctx)
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "Post", ue.Op)
	assert.Equal(t, "http://"+addr+"/mcp", ue.URL)
}

// An http.Client with a cookie jar (or a timeout) is used through its Do, which applies them:
// the server sees the cookie it set.
func TestClientWithCookieJarSendsCookies(t *testing.T) {
	ts := newTestServer(t)
	var withCookie atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ck, err := r.Cookie("affinity"); err == nil && ck.Value == "replica-2" {
			withCookie.Add(1)
		}
		http.SetCookie(w, &http.Cookie{Name: "affinity", Value: "replica-2", Path: "/"})
		ts.srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)

	c := NewClient(hs.URL, WithEra(EraLegacy), WithHTTPClient(&http.Client{Jar: jar}))
	defer closeClient(t, c)
	assert.Nil(t, c.direct, "a client with a cookie jar sends through http.Client.Do")
	assert.Nil(t, NewClient(hs.URL, WithHTTPClient(&http.Client{Timeout: time.Minute})).direct, "nor with a timeout")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.CallTool(ctx, "echo", []byte(`{}`))
	require.NoError(t, err)
	// initialize set the cookie; notifications/initialized and the call carried it.
	assert.Equal(t, int32(2), withCookie.Load(), "requests that carried the cookie")
}

// The calls of a client share one header map when its transport is net/http's; concurrent
// calls must leave it as it was (run under -race, a write to it would be reported).
func TestClientSharedHeadersUnchanged(t *testing.T) {
	ts := newTestServer(t)
	var sid atomic.Value
	c := NewClient(ts.url, WithEra(EraLegacy), WithHeader("X-Tenant", "blue"), WithHTTPClient(ts.hc))
	defer closeClient(t, c)
	require.NotNil(t, c.direct)
	require.True(t, c.direct.std, "the test server's transport is net/http's")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx))
	sid.Store(c.SessionID())
	errs := make(chan error, 16)
	for range cap(errs) {
		go func() {
			_, err := c.CallTool(ctx, "echo", []byte(`{}`))
			errs <- err
		}()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	h := c.postHeader(st)
	assert.Equal(t, http.Header{
		"X-Tenant":             {"blue"},
		"Mcp-Session-Id":       {sid.Load().(string)},
		"Mcp-Protocol-Version": {st.version},
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
	}, h, "the session's shared headers after 16 concurrent calls")
}
