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
	mem := &inMemoryServer{ctx: sctx, cancel: cancel, served: make(chan error, 1), in: c2sW, out: s2cR, closeTimeout: cfg.closeTimeout}
	go func() {
		err := s.ServeStdio(sctx, c2sR, s2cW)
		s2cW.Close() // the client's reader sees the end of the server's output
		c2sR.Close() // and its writes fail
		mem.served <- err
	}()
	mem.m = newMsgConn(c2sW, &cfg, connPeer{name: "the in-memory server"})
	return newConnClient(mem.m, s2cR, cfg, mem.shutdown), nil
}

// inMemoryServer is the server's end of an in-memory client's connection: a session that
// ServeStdio serves on a goroutine, over two pipes.
type inMemoryServer struct {
	m            *msgConn
	ctx          context.Context    // the session's
	cancel       context.CancelFunc // ends the session
	served       chan error         // ServeStdio's error, once it returned
	in           *io.PipeWriter     // the server's input
	out          *io.PipeReader     // the server's output
	closeTimeout time.Duration
}

// shutdown ends the session: it closes the server's input, so that the server ends the
// session, and waits for ServeStdio to return, within ctx and the close timeout; past them,
// it stops waiting for handlers that ignore their cancellation.
func (mem *inMemoryServer) shutdown(ctx context.Context) error {
	defer mem.cancel()
	mem.m.stopWriter(ctx)
	_ = mem.in.Close()               // the server's input ends: it ends the session
	defer func() { <-mem.m.wdone }() // a write in progress has failed
	t := time.NewTimer(mem.closeTimeout)
	defer t.Stop()
	select {
	case err := <-mem.served:
		<-mem.m.done // the server's output was closed before: the reader ends
		return mem.servedErr(err)
	case <-t.C:
	case <-ctx.Done():
	}
	mem.cancel()
	_ = mem.out.Close()
	<-mem.m.done
	return fmt.Errorf("mcp: the in-memory server did not end its session within %s of the client's Close", mem.closeTimeout)
}

// servedErr is what ServeStdio's return err means to Close: nothing when the session was
// cancelled (the client's context ended it), else the server's failure.
func (mem *inMemoryServer) servedErr(err error) error {
	if err != nil && mem.ctx.Err() == nil {
		return fmt.Errorf("mcp: the in-memory server: %w", err)
	}
	return nil
}
