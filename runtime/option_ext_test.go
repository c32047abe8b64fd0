package runtime_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// optionServer serves srv on loopback and returns a connected client with opts.
func optionServer(t *testing.T, srv *runtime.Server, opts ...runtime.ClientOption) *runtime.Client {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		shutdownServer(srv)
	})
	c := runtime.NewClient(hs.URL, append([]runtime.ClientOption{runtime.WithLogger(discardLogger())}, opts...)...)
	t.Cleanup(func() { closeClient(t, c) })
	require.NoError(t, c.Connect(testCtx(t)))
	return c
}

// Zero means the default, where WithMaxSessions(0) and WithMaxInflight(0) used to refuse every
// session and every request: a server given them serves.
func TestOptionZeroServes(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "zero", Version: "1"}, runtime.WithLogger(discardLogger()),
		runtime.WithMaxSessions(0), runtime.WithMaxInflight(0), runtime.WithHandlerTimeout(0), runtime.WithPageSize(0))
	srv.AddTool(runtime.ToolSpec{Name: "ok"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
	})
	c := optionServer(t, srv)
	res, err := c.CallTool(testCtx(t), "ok", nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Text())
}

// WithPageSize(Unlimited) lists every tool on one page, past the default of 100.
func TestOptionUnlimitedPageSize(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "pages", Version: "1"}, runtime.WithLogger(discardLogger()),
		runtime.WithPageSize(runtime.Unlimited))
	for i := range 150 {
		srv.AddTool(runtime.ToolSpec{Name: fmt.Sprintf("t%03d", i)}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return &runtime.CallToolResult{}, nil
		})
	}
	c := optionServer(t, srv)
	res, err := c.ListTools(testCtx(t), "")
	require.NoError(t, err)
	assert.Len(t, res.Tools, 150)
	assert.Empty(t, res.NextCursor)
}

// A call's WithTimeout(Unlimited) lifts the client's default call timeout for that call, and
// WithTimeout(0) keeps it.
func TestOptionUnlimitedCallTimeout(t *testing.T) {
	t.Parallel()
	srv := runtime.NewServer(runtime.Implementation{Name: "slow", Version: "1"}, runtime.WithLogger(discardLogger()))
	srv.AddTool(runtime.ToolSpec{Name: "slow"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		select {
		case <-time.After(400 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("done")}}, nil
	})
	c := optionServer(t, srv, runtime.WithDefaultCallTimeout(100*time.Millisecond))
	_, err := c.CallTool(context.Background(), "slow", nil, runtime.WithTimeout(0))
	assert.Equal(t, runtime.CodeDeadlineExceeded, runtime.CodeOf(err), "WithTimeout(0): the client's default of 100ms, got %v", err)
	// A context without a deadline, so that only the client's default could bound the call;
	// the tool answers after 400ms, which bounds the wait.
	res, err := c.CallTool(context.Background(), "slow", nil, runtime.WithTimeout(runtime.Unlimited))
	require.NoError(t, err, "WithTimeout(Unlimited)")
	assert.Equal(t, "done", res.Text())
}
