package runtime_test

// Tests of interceptors on a real server and client over loopback: the order of server,
// registration and client interceptors, what each sees, refusing a call before its handler,
// replacing an answer, panics inside interceptors, and retries by a client interceptor.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/runtime"
)

// trail records the steps of interceptors and handlers, in order, across goroutines.
type trail struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	tr.steps = append(tr.steps, s)
	tr.mu.Unlock()
}

func (tr *trail) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := tr.steps
	tr.steps = nil
	return out
}

// named is an interceptor that records when a request enters and leaves it.
func named(tr *trail, name string) runtime.Interceptor {
	return runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			tr.add(name + ">" + req.Method)
			resp, err := next(ctx, req)
			tr.add(name + "<" + req.Method)
			return resp, err
		}
	})
}

// only applies an interceptor to one method.
func only(method string, f func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error)) runtime.Interceptor {
	return runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if req.Method != method {
				return next(ctx, req)
			}
			return f(ctx, req, next)
		}
	})
}

// echoTool is a typed tool that echoes its text, counting its calls.
func addEcho(s *runtime.Server, calls *atomic.Int64, tr *trail, opts ...runtime.HandlerOption) {
	runtime.AddTypedTool(s, runtime.ToolSpec{Name: "echo", InputSchema: `{"type":"object","properties":{"text":{"type":"string"}}}`},
		func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
			calls.Add(1)
			if tr != nil {
				tr.add("handler")
			}
			if in.GetText() == "fail" {
				return nil, errors.New("echo refuses to echo fail")
			}
			return &mcpv1.TextContent{Text: in.GetText()}, nil
		}, opts...)
}

func echo(ctx context.Context, c *runtime.Client, text string) (string, error) {
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "echo", &mcpv1.TextContent{Text: text})
	return out.GetText(), err
}

func TestInterceptorOrderAndWhatTheySee(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	tr := &trail{}
	var seen struct {
		sync.Mutex
		server, client *runtime.Request
		clientResp     *runtime.Response
		serverMsg      proto.Message
	}
	watchServer := only("tools/call", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		seen.Lock()
		cp := *req
		seen.server = &cp
		seen.serverMsg = proto.Clone(req.Message)
		seen.Unlock()
		return next(ctx, req)
	})
	e := newClientEnv(t, runtime.WithInterceptors(named(tr, "A"), named(tr, "B"), watchServer))
	var calls atomic.Int64
	addEcho(e.srv, &calls, tr, runtime.WithInterceptors(named(tr, "C")))
	watchClient := only("tools/call", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		resp, err := next(ctx, req)
		seen.Lock()
		cp := *req
		seen.client, seen.clientResp = &cp, resp
		seen.Unlock()
		return resp, err
	})
	c := e.client(t, runtime.WithInterceptors(named(tr, "X"), named(tr, "Y"), watchClient))
	ctx := testCtx(t)
	require.NoError(t, c.Connect(ctx))
	// initialize passes through the client's and the server's interceptors; the session it
	// starts is known inside them once next returns.
	want := []string{"X>initialize", "Y>initialize", "A>initialize", "B>initialize", "B<initialize", "A<initialize", "Y<initialize", "X<initialize"}
	assert.Equal(t, want, tr.take(), "initialize")

	got, err := echo(ctx, c, "hello")
	require.NoError(t, err)
	require.Equal(t, "hello", got, "echo")
	want = []string{
		"X>tools/call", "Y>tools/call", // the client's, first outermost
		"A>tools/call", "B>tools/call", // the server's
		"C>tools/call", // the registration's, inside the server's
		"handler",
		"C<tools/call", "B<tools/call", "A<tools/call",
		"Y<tools/call", "X<tools/call",
	}
	assert.Equal(t, want, tr.take(), "tools/call order")

	seen.Lock()
	sr, cr, cresp, smsg := seen.server, seen.client, seen.clientResp, seen.serverMsg
	seen.Unlock()
	require.NotNil(t, sr, "the server's watching interceptor saw no tools/call")
	require.NotNil(t, cr, "the client's watching interceptor saw no tools/call")
	assert.False(t, sr.IsClient, "server's Request.IsClient")
	assert.Equal(t, "echo", sr.Name, "server's Request.Name")
	assert.Equal(t, c.SessionID(), sr.SessionID, "server's Request.SessionID")
	assert.Equal(t, runtime.LatestProtocolVersion, sr.ProtocolVersion, "server's Request.ProtocolVersion")
	assert.False(t, sr.ID.IsZero(), "server's Request.ID is zero")
	if diff := cmp.Diff(&mcpv1.TextContent{Text: "hello"}, smsg, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("server's Request.Message is not the decoded request (-want +got):\n%s", diff))
	}
	assert.Equal(t, c.SessionID(), sr.Header.Get("Mcp-Session-Id"), "server's Request.Header")
	assert.Contains(t, string(sr.Params), `"hello"`, "server's Request.Params")
	assert.True(t, cr.IsClient, "client's Request.IsClient")
	assert.Equal(t, "echo", cr.Name, "client's Request.Name")
	assert.Equal(t, c.SessionID(), cr.SessionID, "client's Request.SessionID")
	assert.False(t, cr.ID.IsZero(), "client's Request.ID is zero")
	assert.Equal(t, sr.ID.String(), cr.ID.String(), "client's Request.ID against the server's")
	require.NotNil(t, cresp, "client's Response")
	if diff := cmp.Diff(&mcpv1.TextContent{Text: "hello"}, cresp.Message, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("client's Response.Message is not the typed response (-want +got):\n%s", diff))
	}

	// Methods without a registration pass through the server's and client's interceptors only.
	_, err = c.ListTools(ctx, "")
	require.NoError(t, err)
	want = []string{"X>tools/list", "Y>tools/list", "A>tools/list", "B>tools/list", "B<tools/list", "A<tools/list", "Y<tools/list", "X<tools/list"}
	assert.Equal(t, want, tr.take(), "tools/list order")
	e.closeAll(t, c, leaks)
}

func TestInterceptorRefusesBeforeHandler(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	const codeForbidden runtime.Code = -32001
	guard := only("tools/call", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		switch req.Message.(*mcpv1.TextContent).GetText() {
		case "secret":
			return nil, runtime.NewError(codeForbidden, "not allowed to echo secrets")
		case "quiet":
			return nil, errors.New("the guard asks for silence")
		}
		return next(ctx, req)
	})
	e := newClientEnv(t, runtime.WithInterceptors(guard))
	var calls atomic.Int64
	addEcho(e.srv, &calls, nil)
	c := e.client(t)
	ctx := testCtx(t)

	_, err := echo(ctx, c, "secret")
	assert.Equal(t, codeForbidden, runtime.CodeOf(err), "refused with an *Error: %v", err)
	assert.ErrorContains(t, err, "not allowed to echo secrets", "refused with an *Error")
	// A plain error from an interceptor is a tool error, as from a handler.
	_, err = echo(ctx, c, "quiet")
	var te *runtime.ToolError
	if assert.ErrorAs(t, err, &te, "refused with a plain error") {
		assert.ErrorContains(t, te, "the guard asks for silence", "refused with a plain error")
	}
	assert.Zero(t, calls.Load(), "handler runs for refused calls")
	got, err := echo(ctx, c, "fine")
	assert.NoError(t, err, "allowed call")
	assert.Equal(t, "fine", got, "allowed call")
	e.closeAll(t, c, leaks)
}

func TestInterceptorReplacesResult(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	replace := only("tools/call", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		resp, err := next(ctx, req)
		if err != nil {
			return resp, err
		}
		switch req.Message.(*mcpv1.TextContent).GetText() {
		case "upper":
			// Replace the typed answer with another message: it is still encoded by the
			// typed fast path.
			return &runtime.Response{Message: &mcpv1.TextContent{Text: "UPPER"}}, nil
		case "raw":
			// Replace it with a raw result, which takes precedence over Message.
			resp.Result = &runtime.CallToolResult{
				Content:           []runtime.Content{runtime.TextContent(`{"text":"from raw"}`)},
				StructuredContent: json.RawMessage(`{"text":"from raw"}`),
			}
			return resp, nil
		case "hide":
			resp.Result = runtime.ErrorResult("hidden by policy")
			return resp, nil
		}
		return resp, nil
	})
	e := newClientEnv(t, runtime.WithInterceptors(replace))
	var calls atomic.Int64
	addEcho(e.srv, &calls, nil)
	clientSide := only("tools/call", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		resp, err := next(ctx, req)
		m, _ := req.Message.(*mcpv1.TextContent) // nil for the raw CallTool
		if err == nil && m.GetText() == "client" {
			resp.Message = &mcpv1.TextContent{Text: "replaced by the client"}
		}
		return resp, err
	})
	c := e.client(t, runtime.WithInterceptors(clientSide))
	ctx := testCtx(t)
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"upper", "UPPER"},
		{"raw", "from raw"},
		{"client", "replaced by the client"},
	} {
		if got, err := echo(ctx, c, tc.in); err != nil || got != tc.want {
			assert.Fail(t, fmt.Sprintf("echo(%q) = %q, %v; want %q", tc.in, got, err, tc.want))
		}
	}
	var te *runtime.ToolError
	_, err := echo(ctx, c, "hide")
	assert.ErrorAs(t, err, &te, "echo(hide): want the replacing tool error")
	assert.ErrorContains(t, err, "hidden by policy", "echo(hide)")
	// The raw client sees the replaced result as sent.
	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"upper"}`))
	if assert.NoError(t, err, "raw CallTool") {
		assert.Equal(t, `{"text":"UPPER"}`, string(res.StructuredContent), "raw CallTool: the structuredContent as sent")
	}
	e.closeAll(t, c, leaks)
}

func TestInterceptorPanicsAreContained(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	boom := only("tools/call", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		if req.Message.(*mcpv1.TextContent).GetText() == "boom" {
			panic("interceptor exploded")
		}
		resp, err := next(ctx, req)
		if req.Message.(*mcpv1.TextContent).GetText() == "late" {
			panic("interceptor exploded after the handler")
		}
		return resp, err
	})
	e := newClientEnv(t, runtime.WithInterceptors(boom))
	var calls atomic.Int64
	addEcho(e.srv, &calls, nil, runtime.WithInterceptors(only("tools/call", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		if req.Message.(*mcpv1.TextContent).GetText() == "inner" {
			panic("registration interceptor exploded")
		}
		return next(ctx, req)
	})))
	c := e.client(t)
	ctx := testCtx(t)
	for _, in := range []string{"boom", "late", "inner"} {
		_, err := echo(ctx, c, in)
		assert.Falsef(t, runtime.CodeOf(err) != runtime.CodeInternalError || !strings.Contains(err.Error(), `tool "echo"`), "echo(%q) = %v; want an internal error naming the tool", in, err)
		if got, err := echo(ctx, c, "after"); err != nil || got != "after" {
			require.Fail(t, fmt.Sprintf("the server stopped serving after a panic in an interceptor: %q, %v", got, err))
		}
	}
	e.closeAll(t, c, leaks)
}

func TestClientInterceptorRetries(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	e := newClientEnv(t)
	var calls atomic.Int64
	runtime.AddTypedTool(e.srv, runtime.ToolSpec{Name: "flaky"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		if calls.Add(1) < 3 {
			return nil, runtime.NewError(runtime.CodeInternalError, "try again")
		}
		return &mcpv1.TextContent{Text: "third time"}, nil
	})
	var ids []string
	retry := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			for attempt := 1; ; attempt++ {
				resp, err := next(ctx, req)
				if req.Method != "tools/call" {
					return resp, err // initialize passes through here too
				}
				ids = append(ids, req.ID.String())
				if runtime.CodeOf(err) != runtime.CodeInternalError || attempt == 5 {
					return resp, err
				}
			}
		}
	})
	c := e.client(t, runtime.WithInterceptors(retry))
	ctx := testCtx(t)
	out, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "flaky", &mcpv1.TextContent{})
	require.NoError(t, err, "flaky")
	require.Equal(t, "third time", out.GetText(), "flaky")
	assert.EqualValues(t, 3, calls.Load(), "handler runs")
	assert.Len(t, ids, 3, "attempts the interceptor saw")
	assert.Falsef(t, len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids), "attempts reused request IDs: %v", ids)
	e.closeAll(t, c, leaks)
}

// ctxKey is a context key set by HTTP middleware in front of the server.
type ctxKey struct{}

func TestClientMetaAndHeadersReachTheServer(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	e := newClientEnv(t)
	// Middleware in front of the server stores a value in the request context, as an auth
	// or tracing middleware does.
	mw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, "from middleware")))
	})
	e.rec.setHandler(mw)
	var got struct {
		sync.Mutex
		traceparent, header, value string
	}
	runtime.AddTypedTool(e.srv, runtime.ToolSpec{Name: "look"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		caller := runtime.CallerFrom(ctx)
		got.Lock()
		defer got.Unlock()
		if m := caller.Meta(); m != nil {
			got.traceparent = string(m.Other["traceparent"])
		}
		got.header = caller.Header().Get("X-Tenant")
		got.value, _ = ctx.Value(ctxKey{}).(string)
		return &mcpv1.TextContent{}, nil
	})
	inject := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if req.Meta == nil {
				req.Meta = &runtime.RequestMeta{}
			}
			if req.Meta.Other == nil {
				req.Meta.Other = map[string]json.RawMessage{}
			}
			req.Meta.Other["traceparent"] = json.RawMessage(`"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`)
			req.Header = http.Header{"X-Tenant": {"acme"}}
			return next(ctx, req)
		}
	})
	c := e.client(t, runtime.WithInterceptors(inject))
	ctx := testCtx(t)
	// WithMeta entries and the interceptor's travel together.
	_, err := runtime.CallTypedTool[mcpv1.TextContent](ctx, c, "look", &mcpv1.TextContent{}, runtime.WithMeta("k", "v"))
	require.NoError(t, err)
	got.Lock()
	defer got.Unlock()
	assert.Equal(t, `"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`, got.traceparent, "the traceparent the handler saw in _meta")
	assert.Equal(t, "acme", got.header, "the X-Tenant header the handler saw")
	assert.Equal(t, "from middleware", got.value, "the context value the handler saw")
	posts := e.rec.postsOf("tools/call")
	require.Len(t, posts, 1, "tools/call posts")
	assert.Contains(t, string(posts[0].Params), `"k":"v"`, "posted params")
	assert.Contains(t, string(posts[0].Params), `"traceparent"`, "posted params")
	e.closeAll(t, c, leaks)
}

func TestCodeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want runtime.Code
	}{
		{nil, 0},
		{runtime.NewError(runtime.CodeInvalidParams, "x"), runtime.CodeInvalidParams},
		{fmt.Errorf("wrapped: %w", runtime.NewError(runtime.CodeResourceNotFound, "x")), runtime.CodeResourceNotFound},
		{&runtime.HTTPError{StatusCode: 400, RPC: runtime.NewError(runtime.CodeInvalidRequest, "x")}, runtime.CodeInvalidRequest},
		{context.Canceled, runtime.CodeRequestCancelled},
		{errors.New("plain"), runtime.CodeInternalError},
	} {
		if got := runtime.CodeOf(tc.err); got != tc.want {
			assert.Fail(t, fmt.Sprintf("CodeOf(%v) = %v; want %v", tc.err, got, tc.want))
		}
	}
	assert.Equal(t, "invalid_params", runtime.CodeInvalidParams.String())
	assert.Equal(t, "-32099", runtime.Code(-32099).String(), "an unnamed code's String")
}

func TestCallerOutsideHandler(t *testing.T) {
	t.Parallel()
	c := runtime.CallerFrom(context.Background())
	require.Nil(t, c, "CallerFrom(background)")
	assert.Error(t, c.Ping(context.Background()), "Ping on a nil Caller")
	assert.Empty(t, c.SessionID(), "a nil Caller's SessionID")
	assert.Nil(t, c.Meta(), "a nil Caller's Meta")
	assert.Nil(t, c.Header(), "a nil Caller's Header")
}

func TestInterceptorRefusesInitialize(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	var refusedSession string
	guard := only("initialize", func(ctx context.Context, req *runtime.Request, next runtime.CallFunc) (*runtime.Response, error) {
		if req.Header.Get("X-Key") == "" {
			return nil, runtime.NewError(-32001, "an X-Key header is required")
		}
		resp, err := next(ctx, req)
		if req.Header.Get("X-Key") == "late" {
			refusedSession = req.SessionID
			return nil, runtime.NewError(-32001, "refused after the session was made")
		}
		return resp, err
	})
	e := newClientEnv(t, runtime.WithInterceptors(guard))
	ctx := testCtx(t)
	err := e.client(t).Connect(ctx)
	assert.Equal(t, runtime.Code(-32001), runtime.CodeOf(err), "Connect without a key: %v", err)
	assert.ErrorContains(t, err, "X-Key", "Connect without a key")
	err = e.client(t, runtime.WithHeader("X-Key", "late")).Connect(ctx)
	assert.Equal(t, runtime.Code(-32001), runtime.CodeOf(err), "Connect refused late: %v", err)
	// The session made before the refusal was ended: using it gets 404.
	require.NotEmpty(t, refusedSession, "the interceptor saw no session ID after next")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", refusedSession)
	resp, err := e.dc.Client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the refused session's answer")
	c := e.client(t, runtime.WithHeader("X-Key", "k"))
	require.NoError(t, c.Connect(ctx), "Connect with a key")
	e.closeAll(t, c, leaks)
}
