package runtime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Default bounds of a stdio client's shutdown of its server process (spec 2025-11-25,
// "Lifecycle", stdio shutdown): after closing the server's stdin, wait this long for it to
// exit, then send SIGTERM and wait as long again, then SIGKILL.
const (
	defaultStdioExitWait = 2 * time.Second
	defaultStdioTermWait = 2 * time.Second
)

// NewCommandClient starts cmd, an MCP server that speaks the stdio transport (spec 2025-11-25,
// "Transports", stdio), and returns a Client connected to its stdin and stdout. The Client is
// the same as over HTTP: generated clients, interceptors, progress, cancellation and the
// handlers of the server's requests (sampling, elicitation, roots) work unchanged. What the
// process writes to stderr is logged, line by line, at info level with the client's logger
// (up to 1,000 lines a minute; one line counts the rest), unless cmd.Stderr is set.
//
// A process that exits fails the calls with its exit status and the first and last lines of
// its stderr. Options of HTTP (WithHTTPClient, WithHeader, WithOAuth, WithStandaloneStream)
// have no effect here, nor do those of the 2026-07-28 era: the session is a 2025-11-25 one.
//
// Close ends the process as the spec describes: it closes the process's stdin, waits for it
// to exit, then sends SIGTERM, then SIGKILL (see WithStdioShutdown for the waits).
func NewCommandClient(cmd *exec.Cmd, opts ...ClientOption) (*Client, error) {
	cfg := defaultClientConfig()
	for _, o := range opts {
		o.applyClient(&cfg)
	}
	p, err := startCommand(cmd, &cfg)
	if err != nil {
		return nil, err
	}
	m := newMsgConn(p.stdin, &cfg, p.peer())
	return newConnClient(m, p.stdout, cfg, func(ctx context.Context) error { return p.shutdown(ctx, m) }), nil
}

// commandProc is the server process of a command client.
type commandProc struct {
	cmd    *exec.Cmd
	cfg    *clientConfig
	stdin  io.WriteCloser
	stdout *os.File
	stderr *lineLogger // nil when the caller set cmd.Stderr
	exited chan struct{}
	err    error // cmd.Wait's, set before exited is closed
}

// startCommand starts cmd with its stdin and stdout connected to pipes of the client's, and
// its stderr to the client's logger unless cmd.Stderr is set.
func startCommand(cmd *exec.Cmd, cfg *clientConfig) (*commandProc, error) {
	if cmd.Stdout != nil {
		return nil, errors.New("mcp: stdio command: Stdout already set")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: stdio command: %w", err)
	}
	// The child writes to a pipe of ours rather than to exec's (StdoutPipe), which Wait
	// closes as soon as the process exits: what the server wrote last is read to its end.
	stdout, pw, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("mcp: stdio command: %w", err)
	}
	p := &commandProc{cmd: cmd, cfg: cfg, stdin: stdin, stdout: stdout, exited: make(chan struct{})}
	p.wire(pw)
	err = cmd.Start()
	pw.Close() // the child has its own copy
	if err != nil {
		stdout.Close()
		stdin.Close()
		return nil, fmt.Errorf("mcp: start %s: %w", cmd.Path, err)
	}
	go p.wait()
	return p, nil
}

// wire connects the command's stdout to pw, and its stderr to the client's logger unless the
// caller set it, and bounds its Wait.
func (p *commandProc) wire(pw *os.File) {
	cmd := p.cmd
	cmd.Stdout = pw
	if cmd.Stderr == nil {
		p.stderr = &lineLogger{log: p.cfg.logger, attr: slog.String("command", cmd.Path), bound: logBound{burst: stderrLogBurst, window: stderrLogWindow}}
		cmd.Stderr = p.stderr
	}
	if cmd.WaitDelay == 0 {
		// A process of the server's own that keeps its stderr open must not keep Wait, and
		// so Close, waiting once the server has exited.
		cmd.WaitDelay = p.cfg.closeTimeout
	}
}

// wait reaps the process.
func (p *commandProc) wait() {
	p.err = p.cmd.Wait()
	if p.stderr != nil {
		p.stderr.flush()
	}
	p.cfg.logger.Debug("mcp: stdio server exited", "command", p.cmd.Path, "error", p.err)
	close(p.exited)
}

// peer describes the process for the connection's errors.
func (p *commandProc) peer() connPeer {
	peer := connPeer{
		name: "the stdio server " + p.cmd.String(),
		exited: func(d time.Duration) (bool, error) {
			if waitOr(p.exited, d, context.Background()) {
				return true, p.err
			}
			return false, nil
		},
	}
	if p.stderr != nil {
		peer.stderr = p.stderr.excerpt
	}
	return peer
}

// shutdown ends the process (spec 2025-11-25, Lifecycle, Shutdown, stdio): it closes its
// input, waits for it to exit, then sends SIGTERM, then SIGKILL; then it waits for m's reader
// and writer to end.
func (p *commandProc) shutdown(ctx context.Context, m *msgConn) error {
	m.stopWriter(ctx)
	killed := p.stop(ctx)
	// The reader ends when every process holding the pipe's end has exited: the server's
	// own children too, which are given the close timeout.
	if !waitOr(m.done, p.cfg.closeTimeout, ctx) {
		p.stdout.Close() // ends the read
		<-m.done
	}
	p.stdout.Close()
	<-m.wdone // its input closed: a write in progress has failed
	if killed {
		return fmt.Errorf("mcp: stdio server %s ignored stdin's end and SIGTERM; killed", p.cmd.Path)
	}
	return nil
}

// stop ends the process: it closes its input and waits for it to exit, then sends SIGTERM
// and waits again, then SIGKILL. It reports whether it had to kill it.
func (p *commandProc) stop(ctx context.Context) (killed bool) {
	_ = p.stdin.Close()
	if waitOr(p.exited, p.cfg.stdioExitWait, ctx) {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if waitOr(p.exited, p.cfg.stdioTermWait, ctx) {
		return false
	}
	_ = p.cmd.Process.Kill()
	<-p.exited // a killed process is reaped at once (WaitDelay bounds its stderr)
	return true
}

// NewStdioClient returns a Client that speaks the stdio transport over a pair of streams: it
// reads the server's messages from r and writes its own to w. Close closes w, then waits (up
// to the client's close timeout) for r to end. Use NewCommandClient to launch a server.
func NewStdioClient(r io.Reader, w io.WriteCloser, opts ...ClientOption) *Client {
	cfg := defaultClientConfig()
	for _, o := range opts {
		o.applyClient(&cfg)
	}
	m := newMsgConn(w, &cfg, connPeer{name: "the stdio server"})
	shutdown := func(ctx context.Context) error {
		m.stopWriter(ctx)
		_ = w.Close()
		ended := waitOr(m.done, cfg.closeTimeout, ctx)
		waitOr(m.wdone, cfg.closeTimeout, ctx)
		if ended {
			return nil
		}
		return fmt.Errorf("mcp: the stdio server's output did not end within %s of closing its input", cfg.closeTimeout)
	}
	return newConnClient(m, r, cfg, shutdown)
}

// waitOr waits for done, up to d and ctx; it reports whether done closed.
func waitOr(done <-chan struct{}, d time.Duration, ctx context.Context) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// errLineTooLong is returned by readLine for a line over its limit, which it skips.
var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline, skipping blank lines. A line over limit bytes
// is skipped and reported as errLineTooLong, with its first bytes (for the message's id).
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line, head []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > limit+2 {
				head = bytes.Clone(line[:min(len(line), 512)])
				line, tooLong = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err != nil {
				return nil, err
			}
			return head, errLineTooLong
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 && err == nil {
			continue
		}
		return line, err
	}
}

// lineLogger logs what a child process writes to stderr, a line at a time, within a bound
// (stderrLogBurst a minute): a process that writes without end does not flood the log.
type lineLogger struct {
	mu    sync.Mutex
	log   *slog.Logger
	attr  slog.Attr
	buf   []byte
	bound logBound
	// For excerpt: the first lines written, the last ones after those, and how many.
	head, last []string
	lines      int
}

// Write implements io.Writer.
func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 {
		l.emit(l.buf)
		l.buf = nil
	}
	return len(p), nil
}

func (l *lineLogger) emit(line []byte) {
	if s := strings.TrimRight(string(line), "\r"); s != "" {
		l.bound.log(context.Background(), l.log, slog.LevelInfo, "mcp: stdio server stderr", l.attr, slog.String("line", s))
		l.keep(s)
	}
}

// What errors quote of a child's stderr: its first lines (a usage error, a panic's message)
// and its last (the log lines before it exited), each cut to a length.
const (
	stderrHeadLines = 2
	stderrTailLines = 4
	stderrLineBytes = 300
)

// keep records a line for excerpt; l.mu is held.
func (l *lineLogger) keep(s string) {
	s = truncate(strings.Join(strings.Fields(s), " "), stderrLineBytes)
	if s == "" {
		return
	}
	l.lines++
	if len(l.head) < stderrHeadLines {
		l.head = append(l.head, s)
		return
	}
	if len(l.last) == stderrTailLines {
		copy(l.last, l.last[1:])
		l.last = l.last[:stderrTailLines-1]
	}
	l.last = append(l.last, s)
}

// excerpt returns the first and the last lines the process wrote to stderr, joined by "; ",
// with "..." where lines were left out.
func (l *lineLogger) excerpt() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts := append([]string(nil), l.head...)
	if l.lines > len(l.head)+len(l.last) {
		parts = append(parts, "...")
	}
	parts = append(parts, l.last...)
	if s := strings.Join(strings.Fields(string(l.buf)), " "); s != "" { // a last line without its newline
		parts = append(parts, truncate(s, stderrLineBytes))
	}
	return strings.Join(parts, "; ")
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emit(l.buf)
	l.buf = nil
	l.bound.flush(context.Background(), l.log)
}
