package runtime

import (
	"context"
	"sync/atomic"
	"time"
)

// Handler deadlines. Every handler runs under the handler timeout (WithHandlerTimeout); a
// context.WithTimeout per request cost a runtime timer, armed and stopped on every call, and
// four allocations: a fifth of a small SSE call's CPU in the server's profile. Requests that
// start within the same short window share one deadline context instead, a child of their
// session's (or, in 2026-07-28, of the server's), and each request's own context is a
// cancellable child of it: one timer per window, not per call. A handler's deadline is then
// its start plus the timeout, rounded up to the window: at most a 64th of the timeout later
// (about 9 s of the default 10 minutes). Its context ends with context.DeadlineExceeded
// then, as one of WithTimeout's would, and so do the contexts it derives. A window's context
// lives until its deadline (its requests may still run), so a busy session holds at most 65
// of them, each a context and a timer.

// deadlineWindow returns the window of requests that share a deadline, for timeout d.
func deadlineWindow(d time.Duration) time.Duration {
	return d / 64
}

// deadlineGroup is the deadline context shared by the requests that start before until. Its
// cancel is never called once it is in use: the context ends at its deadline, or with its
// parent.
type deadlineGroup struct {
	ctx    context.Context
	cancel context.CancelFunc
	until  time.Time
}

// deadlines hands out deadline contexts under one parent.
type deadlines struct {
	cur atomic.Pointer[deadlineGroup]
}

// handlerContext returns the context a request's handler runs under: a child of parent (the
// session's or the server's context, the one d belongs to), ending at the handler timeout.
func (s *Server) handlerContext(parent context.Context, d *deadlines) (context.Context, context.CancelFunc) {
	timeout := s.cfg.handlerTimeout
	if timeout <= 0 {
		return context.WithCancel(parent)
	}
	window := deadlineWindow(timeout)
	if window <= 0 {
		return context.WithTimeout(parent, timeout)
	}
	now := time.Now()
	g := d.cur.Load()
	if g == nil || !now.Before(g.until) {
		// The context of a passed window lives on, with its timer, until its deadline or
		// the parent's end: its requests may still run.
		ctx, cancel := context.WithDeadline(parent, now.Add(timeout+window))
		ng := &deadlineGroup{ctx: ctx, cancel: cancel, until: now.Add(window)}
		if d.cur.CompareAndSwap(g, ng) {
			g = ng
		} else {
			cancel() // another request made one for this window: its timer goes
			g = d.cur.Load()
		}
	}
	return context.WithCancel(g.ctx)
}
