package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/protomcp/protomcp/internal/origin"
)

// Client budgets: what a server, broken or malicious, can make a client hold or do.
//   - server-to-client requests (sampling, elicitation, roots, ping) run at most
//     WithMaxServerRequests at a time; beyond it the server is answered at once with an error;
//   - notifications waiting for their callbacks hold at most WithNotificationBudget bytes;
//     beyond it they are dropped (logged), and no callback starts once Close has begun;
//   - reconnections (a resumed response stream, the standalone GET stream) wait at least
//     minReconnectDelay whatever the server's retry: field says, and back off exponentially,
//     with jitter, while connections keep ending quickly;
//   - draining a finished stream stops after the drain limit in bytes, counted on every read,
//     comment lines included;
//   - redirects to another origin are refused unless WithCrossOriginRedirects;
//   - a session ID that is not visible ASCII (the transport's rule) fails initialization.

const (
	defaultMaxServerRequests  = 16
	defaultNotificationBudget = 16 << 20
	// minReconnectDelay is the floor of the delay before a reconnection.
	minReconnectDelay = 250 * time.Millisecond
	// maxReconnectDelay caps the backoff.
	maxReconnectDelay = 30 * time.Second
	// quickConnection is how long a connection must last not to count as ending quickly.
	quickConnection = 2 * time.Second
	// maxSessionIDLength bounds the session ID a client accepts.
	maxSessionIDLength = 1024
)

// errCrossOriginRedirect is returned when a server redirects the client to another origin.
var errCrossOriginRedirect = errors.New("mcp: refusing to follow a redirect to another origin (see WithCrossOriginRedirects)")

// guardRedirects returns a copy of hc that refuses cross-origin redirects, keeping hc's own
// redirect policy otherwise.
func guardRedirects(hc *http.Client) *http.Client {
	g := *hc
	prev := hc.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !origin.Same(req.URL, via[0].URL) {
			return fmt.Errorf("%w: %s to %s", errCrossOriginRedirect, via[0].URL.Redacted(), req.URL.Redacted())
		}
		if prev != nil {
			return prev(req, via)
		}
		if len(via) >= 10 {
			return errors.New("mcp: stopped after 10 redirects")
		}
		return nil
	}
	return &g
}

// validSessionID reports whether id is a session ID the transport allows: visible ASCII
// (0x21 to 0x7E) only, and not absurdly long.
func validSessionID(id string) bool {
	if len(id) > maxSessionIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7E {
			return false
		}
	}
	return true
}

// reconnectDelay is how long to wait before reconnecting: the server's retry: value, at least
// minReconnectDelay, as the SSE standard and MCP's resumability rules ask (a server that polls
// closes each stream at once, so one quick end is normal); once connections keep ending
// quickly, doubled for each one in a row after the first (capped at maxReconnectDelay), with
// up to half of it again as jitter so that clients do not reconnect in lockstep.
func reconnectDelay(retry time.Duration, quick int) time.Duration {
	d := max(retry, minReconnectDelay)
	if quick <= 1 {
		return d // the server's interval, exactly
	}
	for range min(quick-1, 10) {
		d *= 2
		if d >= maxReconnectDelay {
			break
		}
	}
	d = min(d, maxReconnectDelay)
	return d + rand.N(d/2+1)
}

// backoff tracks connections that end quickly, for reconnectDelay.
type backoff struct {
	start time.Time
	quick int
}

// connected records the start of a connection.
func (b *backoff) connected() { b.start = time.Now() }

// delay returns how long to wait after the connection ended.
func (b *backoff) delay(retry time.Duration) time.Duration {
	if !b.start.IsZero() && time.Since(b.start) < quickConnection {
		b.quick++
	} else {
		b.quick = 0
	}
	return reconnectDelay(retry, b.quick)
}

// acquireInit takes the right to initialize, or gives up when ctx ends: a Connect or a call
// must not wait past its context for another goroutine's initialize that hangs.
func (c *Client) acquireInit(ctx context.Context) error {
	select {
	case c.initSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcp: waiting for initialization: %w", ctx.Err())
	}
}

func (c *Client) releaseInit() { <-c.initSem }

// tryServerRequest takes a slot for a server request's handler; false when all are taken.
func (c *Client) tryServerRequest() bool {
	select {
	case c.serverReqSem <- struct{}{}:
		return true
	default:
		return false
	}
}

// refuseServerRequest answers a server request beyond the limit, on the reading goroutine:
// a server that floods the client waits for it.
func (c *Client) refuseServerRequest(st *clientSession, m *wireMessage) {
	body := encodeResponse(m.ID, nil, Errorf(CodeInternalError, "the client is handling too many requests from the server (limit %d); try again later", c.cfg.maxServerRequests))
	ctx, cancel := context.WithTimeout(c.baseCtx, c.cfg.closeTimeout)
	defer cancel()
	if err := c.postNoReply(ctx, st, body); err != nil {
		c.logs.log(ctx, c.cfg.logger, slog.LevelDebug, "mcp: could not refuse a server request", "method", m.Method, "error", err)
	}
}

// errDrainLimit ends the drain of a finished stream past its byte limit.
var errDrainLimit = errors.New("mcp: the finished stream went on past the drain limit")
