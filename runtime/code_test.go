package runtime_test

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// codeServer serves one tool, "block", that waits for its context to end (after saying so
// on started), at /mcp of a loopback server.
func codeServer(t *testing.T, tls bool) (url string, started <-chan struct{}) {
	t.Helper()
	srv := runtime.NewServer(runtime.Implementation{Name: "codes", Version: "1"}, runtime.WithLogger(discardLogger()))
	ch := make(chan struct{}, 1)
	srv.AddTool(runtime.ToolSpec{Name: "block"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		ch <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	var hs *httptest.Server
	if tls {
		hs = httptest.NewTLSServer(mux)
	} else {
		hs = httptest.NewServer(mux)
	}
	t.Cleanup(func() {
		hs.Close()
		shutdownServer(srv)
	})
	return hs.URL, ch
}

// awaitStart waits, bounded, for the tool to have started, so that the next subtest's call
// does not take this one's signal.
func awaitStart(t *testing.T, started <-chan struct{}) {
	t.Helper()
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Error("the tool never started")
	}
}

func closeClient(t *testing.T, c *runtime.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

// A call that runs out of time reports CodeDeadlineExceeded, whether WithTimeout or the
// caller's context set the deadline, and a cancelled one CodeRequestCancelled: neither is a
// failure of the server (internal_error).
func TestCodeOfClientTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	url, started := codeServer(t, false)
	c := runtime.NewClient(url+"/mcp", runtime.WithLogger(discardLogger()))
	defer closeClient(t, c)
	require.NoError(t, c.Connect(testCtx(t)))

	t.Run("WithTimeout", func(t *testing.T) {
		_, err := c.CallTool(testCtx(t), "block", nil, runtime.WithTimeout(200*time.Millisecond))
		require.Error(t, err)
		assert.Equal(t, runtime.CodeDeadlineExceeded, runtime.CodeOf(err), "CodeOf(%v)", err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		awaitStart(t, started)
	})
	t.Run("context deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
		defer cancel()
		_, err := c.CallTool(ctx, "block", nil)
		require.Error(t, err)
		assert.Equal(t, runtime.CodeDeadlineExceeded, runtime.CodeOf(err), "CodeOf(%v)", err)
		awaitStart(t, started)
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		go func() {
			select {
			case <-started:
				cancel()
			case <-time.After(testTimeout):
			}
		}()
		_, err := c.CallTool(ctx, "block", nil)
		require.Error(t, err)
		assert.Equal(t, runtime.CodeRequestCancelled, runtime.CodeOf(err), "CodeOf(%v)", err)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// Failures to reach an MCP server report CodeUnavailable: a refused connection, a wrong path
// (whose 404 asks whether the URL is right), a TLS handshake with a server the client does not
// trust, a malformed URL.
func TestCodeOfUnreachable(t *testing.T) {
	t.Parallel()
	connect := func(t *testing.T, url string) error {
		t.Helper()
		c := runtime.NewClient(url, runtime.WithLogger(discardLogger()))
		defer closeClient(t, c)
		err := c.Connect(testCtx(t))
		require.Error(t, err, "Connect(%s)", url)
		return err
	}
	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		err = connect(t, "http://"+addr+"/mcp")
		assert.Equal(t, runtime.CodeUnavailable, runtime.CodeOf(err), "CodeOf(%v)", err)
		var op *net.OpError
		assert.ErrorAs(t, err, &op, "the chain keeps the network error")
	})
	t.Run("wrong path", func(t *testing.T) {
		url, _ := codeServer(t, false)
		err := connect(t, url+"/wrong")
		assert.Equal(t, runtime.CodeUnavailable, runtime.CodeOf(err), "CodeOf(%v)", err)
		var he *runtime.HTTPError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, http.StatusNotFound, he.StatusCode)
		assert.Contains(t, err.Error(), "is the URL right?")
	})
	t.Run("untrusted TLS", func(t *testing.T) {
		url, _ := codeServer(t, true)
		err := connect(t, url+"/mcp")
		assert.Equal(t, runtime.CodeUnavailable, runtime.CodeOf(err), "CodeOf(%v)", err)
		var unknown x509.UnknownAuthorityError
		assert.ErrorAs(t, err, &unknown, "the chain keeps the certificate error")
	})
	t.Run("malformed URL", func(t *testing.T) {
		err := connect(t, "http://[::1/mcp")
		assert.Equal(t, runtime.CodeUnavailable, runtime.CodeOf(err), "CodeOf(%v)", err)
	})
}

func TestLocalCodeNames(t *testing.T) {
	t.Parallel()
	for code, name := range map[runtime.Code]string{
		runtime.CodeRequestCancelled: "request_cancelled",
		runtime.CodeDeadlineExceeded: "deadline_exceeded",
		runtime.CodeUnavailable:      "unavailable",
	} {
		assert.Equal(t, name, code.String())
	}
	assert.Equal(t, runtime.CodeInternalError, runtime.CodeOf(&runtime.HTTPError{StatusCode: 500, Status: "500 Internal Server Error"}),
		"a server's 500 without a JSON-RPC error is the server's failure")
	assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(&runtime.HTTPError{StatusCode: 404, RPC: runtime.NewError(runtime.CodeInvalidParams, "x")}),
		"a JSON-RPC error in the body wins over the status")
	assert.NotContains(t, (&runtime.HTTPError{StatusCode: 400, Status: "400 Bad Request"}).Error(), "is the URL right?")
}
