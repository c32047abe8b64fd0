package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// NewInMemoryClient connects a Client to s in the same process, without sockets or a child
// process: the two exchange the stdio transport's messages (spec 2025-11-25, Transports,
// stdio) over in-memory pipes, and s serves them with ServeStdio. Everything works as over a
// network (generated clients, interceptors, progress, cancellation, and the client's handlers
// of the server's sampling, elicitation and roots requests), which makes it the transport of
// tests of a server and its clients.
//
// The connection is one session of s, which serves it under ctx: when ctx ends, the session
// ends and the client's calls fail. Close ends the session (the server sees its input end and
// cancels the handlers still running) and waits, within its context and the client's close
// timeout, for ServeStdio to return. Close does not shut s down: s may serve other
// connections.
func NewInMemoryClient(ctx context.Context, s *Server, opts ...ClientOption) (*Client, error) {
	if s == nil {
		return nil, errors.New("mcp: NewInMemoryClient: nil server")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mcp: NewInMemoryClient: %w", err)
	}
	cfg := defaultClientConfig()
	for _, o := range opts {
		o.applyClient(&cfg)
	}
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		err := s.ServeStdio(sctx, c2sR, s2cW)
		s2cW.Close() // the client's reader sees the end of the server's output
		c2sR.Close() // and its writes fail
		served <- err
	}()
	m := newMsgConn(c2sW, &cfg, connPeer{name: "the in-memory server"})
	shutdown := func(ctx context.Context) error {
		defer cancel()
		m.stopWriter(ctx)
		_ = c2sW.Close()             // the server's input ends: it ends the session
		defer func() { <-m.wdone }() // a write in progress has failed
		t := time.NewTimer(cfg.closeTimeout)
		defer t.Stop()
		select {
		case err := <-served:
			<-m.done // the server's output was closed before: the reader ends
			if err != nil && sctx.Err() == nil {
				return fmt.Errorf("mcp: the in-memory server: %w", err)
			}
			return nil
		case <-t.C:
		case <-ctx.Done():
		}
		// Its handlers ignore their cancellation: stop waiting for them.
		cancel()
		_ = s2cR.Close()
		<-m.done
		return fmt.Errorf("mcp: the in-memory server did not end its session within %s of the client's Close", cfg.closeTimeout)
	}
	return newConnClient(m, s2cR, cfg, shutdown), nil
}
