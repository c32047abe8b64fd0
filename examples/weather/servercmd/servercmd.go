// Package servercmd is the weather example server's command: it serves the example
// WeatherService as an MCP server over Streamable HTTP, or over stdio for a host that launches
// it (Claude Desktop, VS Code, the MCP Inspector). examples/weather/server is its main; a
// variant adds flags and server options through Extension (the replica-set server of the
// redis module adds -redis that way, keeping go-redis out of the root module).
//
//	go run ./examples/weather/server -addr 127.0.0.1:8081 -path /mcp
//	go run ./examples/weather/server -stdio
//
// With -rate-limit N/m, each caller may call the tools N times a minute, all tools together,
// and open N sessions a minute, so that an anonymous caller cannot renew its quota with a new
// session (per replica; the redis module's variant, with -redis, gives the replicas one
// quota).
//
// With -auth-issuer, it is an OAuth 2.1 protected resource: every request needs a JWT access
// token from that issuer whose audience is -auth-audience (by default the server's URL), and
// it serves its Protected Resource Metadata (RFC 9728) for clients to discover the issuer:
//
//	go run ./examples/weather/server -auth-issuer https://auth.example.com
package servercmd

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/protomcp/protomcp/examples/weather"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/jwtauth"
	"github.com/protomcp/protomcp/runtime"
)

// authFlags configure token verification (HTTP only).
type authFlags struct {
	issuer, audience string
	scopes           string
}

// Extension adds flags and server options to the command.
type Extension struct {
	// Flags registers extra flags, before the command line is parsed.
	Flags func(fs *flag.FlagSet)
	// Options returns options for the HTTP server (after parsing), and a function that
	// releases what they hold once the server stopped (may be nil).
	Options func(log *slog.Logger) (opts []runtime.ServerOption, release func(), err error)
}

// Main parses the command line (flag.CommandLine) and serves until SIGINT or SIGTERM; it exits
// the process on failure.
func Main(ext Extension) {
	if ext.Flags != nil {
		ext.Flags(flag.CommandLine)
	}
	addr := flag.String("addr", "127.0.0.1:8081", "address to listen on (its own port, so that the other examples can run beside it; port 0 picks a free one)")
	path := flag.String("path", "/mcp", "URL path of the MCP endpoint")
	stdio := flag.Bool("stdio", false, "serve over stdin and stdout instead of HTTP (logs go to stderr)")
	var auth authFlags
	flag.StringVar(&auth.issuer, "auth-issuer", "", "require JWT access tokens from this OAuth issuer (its metadata and JWKS are fetched from it)")
	flag.StringVar(&auth.audience, "auth-audience", "", "the audience tokens must name: this server's resource URI (default: the server's URL)")
	flag.StringVar(&auth.scopes, "auth-scopes", "", "space-separated scopes every request needs")
	var limit []runtime.ServerOption
	flag.Func("rate-limit", "limit each caller's tool calls, all tools together, to N/m (N a minute; also N/s, N/h); a caller is the token's subject, else the session, else the client's address; new sessions are limited to N/m per address too", func(v string) error {
		r, err := runtime.ParseRate(v)
		if err != nil {
			return err
		}
		limit = []runtime.ServerOption{runtime.WithRateLimit(runtime.LimitTools(r), runtime.LimitSessions(r))}
		return nil
	})
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var err error
	if *stdio {
		if auth.issuer != "" {
			log.Error("-auth-issuer applies to HTTP only: a stdio server is the user's own process (MCP Authorization, Introduction)")
			os.Exit(2)
		}
		err = serveStdio(log, limit...)
	} else {
		err = serveHTTPWith(ext, *addr, *path, auth, log, limit...)
	}
	if err != nil {
		log.Error("server failed", "err", err)
		os.Exit(1)
	}
}

// serveHTTPWith serves HTTP with opts and the extension's options, released once the server
// stopped.
func serveHTTPWith(ext Extension, addr, path string, auth authFlags, log *slog.Logger, opts ...runtime.ServerOption) error {
	extra := opts
	if ext.Options != nil {
		more, release, err := ext.Options(log)
		if err != nil {
			return err
		}
		if release != nil {
			defer release()
		}
		extra = append(extra, more...)
	}
	return serveHTTP(addr, path, auth, log, extra...)
}

func newServer(log *slog.Logger, opts ...runtime.ServerOption) *runtime.Server {
	opts = append([]runtime.ServerOption{runtime.WithLogger(log)}, opts...)
	srv := runtime.NewServer(runtime.Implementation{Name: "weather", Title: "Weather example", Version: runtime.Version}, opts...)
	weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{})
	return srv
}

// serveStdio serves one client on stdin and stdout until stdin ends, SIGINT or SIGTERM.
func serveStdio(log *slog.Logger, opts ...runtime.ServerOption) error {
	srv := newServer(log, opts...)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if errors.Is(err, context.Canceled) {
		return nil // a signal: a clean exit
	}
	return err
}

func serveHTTP(addr, path string, auth authFlags, log *slog.Logger, extra ...runtime.ServerOption) error {
	// Listen first, so that the logged URL is one that answers (and has the real port when
	// addr asks for any free one, as make demo does with 127.0.0.1:0).
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + path
	mux := http.NewServeMux()
	opts := extra
	if auth.issuer != "" {
		if auth.audience == "" {
			auth.audience = url
		}
		v, err := jwtauth.NewVerifier(jwtauth.Config{Issuer: auth.issuer, Audience: auth.audience})
		if err != nil {
			return err
		}
		pr := runtime.ProtectedResource{
			Resource:             auth.audience,
			AuthorizationServers: []string{auth.issuer},
			Scopes:               strings.Fields(auth.scopes),
			ResourceName:         "Weather example",
		}
		opts = append(opts, runtime.WithTokenVerifier(v, pr))
		// The server is mounted under a path: its metadata goes at the well-known path
		// derived from its resource URI.
		mux.Handle(pr.MetadataPath(), pr.MetadataHandler())
		log.Info("requiring OAuth access tokens", "issuer", auth.issuer, "audience", auth.audience, "metadata", pr.WellKnownURL())
	}
	srv := newServer(log, opts...)
	mux.Handle(path, srv)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: it would cut SSE streams; the MCP server bounds its writes itself.
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("serving MCP", "url", url)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The MCP server first: it ends its sessions' streams, which http.Server.Shutdown would
	// otherwise wait on until its deadline.
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("MCP server shutdown", "err", err)
	}
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
