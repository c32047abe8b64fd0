package runtime

import (
	"context"
	"log/slog"
	goruntime "runtime"
	"sync"
	"time"
)

// The bound on the lines a peer can make a logger write: of each message, the first
// logBurst lines of a logWindow are written; the rest are counted, and one line says how many
// there were, when the next window opens or the scope (a stream, a connection, the server)
// ends. A peer that sends a million malformed events costs a handful of lines, not a million.
const (
	logBurst  = 10
	logWindow = time.Minute
)

// The bound on the lines of a stdio server's stderr that the client logs: the server's own
// log, so far more of it than of any one warning, but not without end.
const (
	stderrLogBurst  = 1000
	stderrLogWindow = time.Minute
)

// logBound bounds the log lines of one scope (a stream, a connection, a server) that a peer
// can trigger once per message it sends: undecodable messages, responses to no request,
// unknown notifications. Its zero value is ready; it is safe for concurrent use. Lines are
// keyed by their message, which is a constant of this package, so the keys are few.
type logBound struct {
	// burst and window replace logBurst and logWindow when set.
	burst  int
	window time.Duration

	mu    sync.Mutex
	kinds map[string]*logKind
}

// logKind is the count of one message's lines in the current window.
type logKind struct {
	level      slog.Level
	start      time.Time // when the window opened
	written    int       // lines written in it
	suppressed int       // lines counted but not written in it
}

// log writes a line of msg at level with args to l, unless msg's lines of the current window
// have reached the burst: then it counts it. A level l does not log costs no lock.
func (b *logBound) log(ctx context.Context, l *slog.Logger, level slog.Level, msg string, args ...any) {
	b.logFrom(ctx, l, level, msg, args...)
}

// logFrom is log for a caller one frame below the line's site (log, peerLog and its
// levels): the line's source, for a handler that adds it, is that site.
func (b *logBound) logFrom(ctx context.Context, l *slog.Logger, level slog.Level, msg string, args ...any) {
	if !l.Enabled(ctx, level) {
		return
	}
	now := time.Now()
	b.mu.Lock()
	if b.kinds == nil {
		b.kinds = make(map[string]*logKind)
	}
	k := b.kinds[msg]
	if k == nil {
		k = &logKind{level: level, start: now}
		b.kinds[msg] = k
	}
	burst, window := logBurst, logWindow
	if b.burst > 0 {
		burst, window = b.burst, b.window
	}
	var summary int
	if now.Sub(k.start) >= window {
		summary = k.suppressed
		k.start, k.written, k.suppressed = now, 0, 0
	}
	write := k.written < burst
	if write {
		k.written++
	} else {
		k.suppressed++
	}
	b.mu.Unlock()
	if summary > 0 {
		logSuppressed(ctx, l, level, msg, summary)
	}
	if write {
		var pc [1]uintptr
		goruntime.Callers(3, pc[:]) // Callers, logFrom, its caller: the site is next
		r := slog.NewRecord(now, level, msg, pc[0])
		r.Add(args...)
		_ = l.Handler().Handle(ctx, r)
	}
}

// flush writes one line per message whose lines were counted and not written since its
// window opened, saying how many, and forgets them: the scope ends.
func (b *logBound) flush(ctx context.Context, l *slog.Logger) {
	b.mu.Lock()
	kinds := b.kinds
	b.kinds = nil
	b.mu.Unlock()
	for msg, k := range kinds {
		if k.suppressed > 0 {
			logSuppressed(ctx, l, k.level, msg, k.suppressed)
		}
	}
}

// logSuppressed writes the line that stands for n lines of msg that were not written.
func logSuppressed(ctx context.Context, l *slog.Logger, level slog.Level, msg string, n int) {
	l.Log(ctx, level, msg+" (more lines like this were not written)", "suppressed", n)
}

// peerLog writes a line that a peer can make the server write once per message or request
// (a response to no request, an unknown notification, a refused token, a handler's panic),
// within the server's bound: see logBound. Shutdown writes the counts of what it left out.
func (s *Server) peerLog(level slog.Level, msg string, args ...any) {
	s.logs.logFrom(context.Background(), s.log, level, msg, args...)
}

// peerDebug is peerLog at slog.LevelDebug.
func (s *Server) peerDebug(msg string, args ...any) {
	s.logs.logFrom(context.Background(), s.log, slog.LevelDebug, msg, args...)
}

// peerInfo is peerLog at slog.LevelInfo.
func (s *Server) peerInfo(msg string, args ...any) {
	s.logs.logFrom(context.Background(), s.log, slog.LevelInfo, msg, args...)
}

// peerWarn is peerLog at slog.LevelWarn.
func (s *Server) peerWarn(msg string, args ...any) {
	s.logs.logFrom(context.Background(), s.log, slog.LevelWarn, msg, args...)
}

// peerError is peerLog at slog.LevelError.
func (s *Server) peerError(msg string, args ...any) {
	s.logs.logFrom(context.Background(), s.log, slog.LevelError, msg, args...)
}

// peerWarn writes a warning that a server can make the client write once per message or
// item it sends, outside any stream, within the client's bound: see logBound. Close writes
// the counts of what it left out.
func (c *Client) peerWarn(msg string, args ...any) {
	c.logs.logFrom(c.baseCtx, c.cfg.logger, slog.LevelWarn, msg, args...)
}
