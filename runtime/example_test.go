package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// exampleNow fixes the weather example's clock, so that the examples' output is stable.
var exampleNow = func() time.Time { return time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC) }

// exampleServer serves the generated weather tools on loopback, as a real deployment would
// (see Example_server), and returns its URL and a function that shuts it down.
func exampleServer(opts ...runtime.ServerOption) (url string, shutdown func()) {
	opts = append([]runtime.ServerOption{runtime.WithLogger(discardLogger())}, opts...)
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: "1.0.0"}, opts...)
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: exampleNow})
	hs := httptest.NewServer(srv)
	return hs.URL, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx) // first the MCP server: it ends the sessions' streams
		hs.Close()
	}
}

// A server: the generated registration on a runtime.Server, mounted on a hardened
// http.Server, and shut down in the right order.
func Example_server() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: "1.0.0"},
		runtime.WithLogger(log),
		runtime.WithInstructions("Forecasts and alerts for any city."))
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})

	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	hs := &http.Server{
		Addr:              "127.0.0.1:8080",
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // slow headers
		ReadTimeout:       30 * time.Second, // slow bodies (GET streams have no body to read)
		IdleTimeout:       2 * time.Minute,  // idle keep-alive connections
		// No WriteTimeout: it would cut long SSE streams. The MCP server bounds each write to
		// a client itself (runtime.WithWriteTimeout).
	}
	go func() { _ = hs.ListenAndServe() }()

	// At exit: the MCP server first, so that its streams end and hs.Shutdown need not wait
	// for clients holding GET streams; then the HTTP server.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = hs.Shutdown(ctx)
	fmt.Println("stopped")
	// Output: stopped
}

// A typed call through the generated client, and the three kinds of failure it can return.
func Example_client() {
	url, shutdown := exampleServer()
	defer shutdown()
	ctx := context.Background()

	c := runtime.NewClient(url + "/mcp")
	defer c.Close(ctx)
	weatherClient := weatherv1mcp.NewWeatherServiceClient(c)

	days := int32(2)
	fc, err := weatherClient.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"},
		Days:     &days,
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(fc.GetPlace().GetName(), len(fc.GetDays()), "days")

	// 40 days is more than the tool allows: the tool reports an error the model can read.
	days = 40
	_, err = weatherClient.GetForecast(ctx, &weatherv1.GetForecastRequest{
		Location: &weatherv1.GetForecastRequest_City{City: "Paris, FR"},
		Days:     &days,
	})
	var (
		toolErr *runtime.ToolError
		rpcErr  *runtime.Error
		httpErr *runtime.HTTPError
	)
	switch {
	case errors.As(err, &toolErr):
		fmt.Println("tool error from", toolErr.Tool)
	case errors.As(err, &rpcErr):
		fmt.Println("protocol error:", rpcErr.Code)
	case errors.As(err, &httpErr):
		fmt.Println("HTTP error:", httpErr.StatusCode)
	}

	// A tool the server does not have is a protocol error.
	_, err = c.CallTool(ctx, "no_such_tool", nil)
	fmt.Println("code:", runtime.CodeOf(err))
	// Output:
	// Paris, FR 2 days
	// tool error from get_forecast
	// code: invalid_params
}

// Progress notifications of a call arrive, in order, before the call returns.
func ExampleWithProgress() {
	url, shutdown := exampleServer()
	defer shutdown()
	ctx := context.Background()
	c := runtime.NewClient(url + "/mcp")
	defer c.Close(ctx)

	days := int32(3)
	_, err := weatherv1mcp.NewWeatherServiceClient(c).GetForecast(ctx,
		&weatherv1.GetForecastRequest{Location: &weatherv1.GetForecastRequest_City{City: "Oslo, NO"}, Days: &days},
		runtime.WithProgress(func(p *runtime.ProgressParams) {
			fmt.Printf("%v of %v\n", p.Progress, *p.Total)
		}))
	fmt.Println("done:", err)
	// Output:
	// 1 of 3
	// 2 of 3
	// 3 of 3
	// done: <nil>
}

// Cancelling a call's context returns at once and tells the server (notifications/cancelled),
// which cancels the handler's context.
func ExampleWithTimeout() {
	url, shutdown := exampleServer()
	defer shutdown()
	ctx := context.Background()
	c := runtime.NewClient(url + "/mcp")
	defer c.Close(ctx)

	// A deadline too short for any call.
	_, err := c.CallTool(ctx, weatherv1mcp.WeatherServiceGetForecastToolName, nil, runtime.WithTimeout(time.Nanosecond))
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output: true
}

// A server interceptor that refuses calls without an API key, and a client interceptor that
// sends one.
func ExampleWithInterceptors() {
	requireKey := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if req.Method == "tools/call" && req.Header.Get("X-Api-Key") != "secret" {
				return nil, runtime.NewError(-32001, "an X-Api-Key header is required")
			}
			return next(ctx, req)
		}
	})
	url, shutdown := exampleServer(runtime.WithInterceptors(requireKey))
	defer shutdown()
	ctx := context.Background()

	anonymous := runtime.NewClient(url + "/mcp")
	defer anonymous.Close(ctx)
	_, err := anonymous.CallTool(ctx, "list_alerts", nil)
	fmt.Println(err)

	sendKey := runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			req.Header = http.Header{"X-Api-Key": {"secret"}}
			return next(ctx, req)
		}
	})
	withKey := runtime.NewClient(url+"/mcp", runtime.WithInterceptors(sendKey))
	defer withKey.Close(ctx)
	res, err := withKey.CallTool(ctx, "list_alerts", json.RawMessage(`{"regions":["FR"]}`))
	fmt.Println(err, res.IsError)
	// Output:
	// mcp tools/call: jsonrpc error -32001: an X-Api-Key header is required
	// <nil> false
}

// A handler talks back to the client that called it through its Caller: here, a log message
// that the client receives before the call's result.
func ExampleCallerFrom() {
	srv := runtime.NewServer(runtime.Implementation{Name: "greeter", Version: "1"}, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	srv.AddTool(runtime.ToolSpec{Name: "greet"}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		caller := runtime.CallerFrom(ctx)
		_ = caller.Log(ctx, runtime.LevelInfo, "greeter", "greeting "+caller.Info().Name)
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("hello")}}, nil
	})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	c := runtime.NewClient(hs.URL,
		runtime.WithClientInfo(runtime.Implementation{Name: "example-client", Version: "1"}),
		runtime.WithLogHandler(func(_ context.Context, m *runtime.LogMessageParams) {
			fmt.Println("log:", m.Data)
		}))
	defer c.Close(ctx)
	res, err := c.CallTool(ctx, "greet", nil)
	fmt.Println(res.Text(), err)
	// Output:
	// log: greeting example-client
	// hello <nil>
}

// A stdio server and client, here over in-process pipes; a host launches a server binary
// with runtime.NewCommandClient, and the server serves os.Stdin and os.Stdout.
func ExampleServer_ServeStdio() {
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Version: "1.0.0"}, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: exampleNow})
	clientToServer, clientOut := io.Pipe()
	clientIn, serverToClient := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStdio(context.Background(), clientToServer, serverToClient)
		serverToClient.Close()
	}()

	ctx := context.Background()
	c := runtime.NewStdioClient(clientIn, clientOut)
	alerts, err := weatherv1mcp.NewWeatherServiceClient(c).ListAlerts(ctx, &weatherv1.ListAlertsRequest{Regions: []string{"FR"}})
	fmt.Println(len(alerts.GetAlerts()) > 0, err)
	_ = c.Close(ctx) // closes the server's input: ServeStdio returns
	fmt.Println("served:", <-served)
	_ = srv.Shutdown(ctx)
	// Output:
	// true <nil>
	// served: <nil>
}

// Authentication in an HTTP middleware of your own: it refuses requests without a valid
// bearer token (the client sees an *HTTPError) and hands the caller's identity to the server
// with ContextWithTokenInfo; handlers read it with TokenInfoFrom, and the session is bound to
// it. runtime.WithTokenVerifier does the same for OAuth 2.1 access tokens.
func ExampleContextWithTokenInfo() {
	srv := runtime.NewServer(runtime.Implementation{Name: "whoami", Version: "1"}, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	srv.AddTool(runtime.ToolSpec{Name: "whoami"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("you are " + runtime.TokenInfoFrom(ctx).Subject)}}, nil
	})
	users := map[string]string{"Bearer token-of-ada": "ada"} // your token check goes here
	authenticate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			user, ok := users[r.Header.Get("Authorization")]
			if !ok {
				http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r.WithContext(runtime.ContextWithTokenInfo(r.Context(), &runtime.TokenInfo{Subject: user})))
		})
	}
	hs := httptest.NewServer(authenticate(srv))
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	ctx := context.Background()

	anonymous := runtime.NewClient(hs.URL)
	_, err := anonymous.CallTool(ctx, "whoami", nil)
	var httpErr *runtime.HTTPError
	fmt.Println(errors.As(err, &httpErr), httpErr.StatusCode)

	ada := runtime.NewClient(hs.URL, runtime.WithHeader("Authorization", "Bearer token-of-ada"))
	defer ada.Close(ctx)
	res, err := ada.CallTool(ctx, "whoami", nil)
	fmt.Println(res.Text(), err)
	// Output:
	// true 401
	// you are ada <nil>
}

// Cancelling a call's context ends the call at once and tells the server, which cancels the
// handler's context (notifications/cancelled).
func ExampleClient_CallTool_cancel() {
	started, handlerDone := make(chan struct{}), make(chan error, 1)
	srv := runtime.NewServer(runtime.Implementation{Name: "slow", Version: "1"}, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	srv.AddTool(runtime.ToolSpec{Name: "slow"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		close(started)
		<-ctx.Done() // a real handler passes ctx to what it waits on
		handlerDone <- ctx.Err()
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	c := runtime.NewClient(hs.URL)
	defer c.Close(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := c.CallTool(ctx, "slow", nil)
	fmt.Println("call:", errors.Is(err, context.Canceled), runtime.CodeOf(err))
	fmt.Println("handler:", <-handlerDone)
	// Output:
	// call: true request_cancelled
	// handler: context canceled
}

// Shutdown lets calls in flight finish until its deadline, then cancels their handlers and
// ends every session; only then is the http.Server shut down.
func ExampleServer_Shutdown() {
	started := make(chan struct{})
	srv := runtime.NewServer(runtime.Implementation{Name: "slow", Version: "1"}, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	srv.AddTool(runtime.ToolSpec{Name: "slow"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	hs := httptest.NewServer(srv)
	c := runtime.NewClient(hs.URL)
	callDone := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "slow", nil)
		callDone <- err
	}()
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	fmt.Println("MCP server:", srv.Shutdown(ctx)) // the slow call outlives the deadline: cancelled
	hs.Close()
	fmt.Println("call failed:", <-callDone != nil)
	// Output:
	// MCP server: context deadline exceeded
	// call failed: true
}
