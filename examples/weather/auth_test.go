package weather_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/stretchr/testify/require"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protomcp/protomcp/internal/testissuer"
)

// lineWaiter hands over the lines a process writes, for a test that waits for one.
type lineWaiter struct {
	lines chan string
	all   bytes.Buffer
}

func watchLines(r io.Reader) *lineWaiter {
	lw := &lineWaiter{lines: make(chan string, 256)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lw.all.WriteString(sc.Text() + "\n")
			select {
			case lw.lines <- sc.Text():
			default:
			}
		}
		close(lw.lines)
	}()
	return lw
}

// wait returns the first line for which match returns a non-empty string, within ctx.
func (lw *lineWaiter) wait(ctx context.Context, t *testing.T, what string, match func(string) string) string {
	t.Helper()
	for {
		select {
		case line, ok := <-lw.lines:
			require.Truef(t, ok, "the process ended before %s", what)
			if v := match(line); v != "" {
				return v
			}
		case <-ctx.Done():
			require.Fail(t, fmt.Sprintf("no %s: %v", what, ctx.Err()))
		}
	}
}

// The weather server started with -auth-issuer refuses a client without a token; the
// weather client with -login logs in with the authorization code grant against the test
// issuer (the test plays the browser: it opens the URL the client prints) and calls every
// tool. Server, client and issuer are real processes and servers on loopback.
func TestAuthorizationCodeLoginBinaries(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	for _, b := range []string{"server", "client"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, b), "./"+b).CombinedOutput(); err != nil {
			require.Fail(t, fmt.Sprintf("go build ./%s: %v\n%s", b, err, out))
		}
	}
	is, err := testissuer.Start(testissuer.WithSubject("weather-fan"))
	require.NoError(t, err)
	defer is.Close()

	srv := exec.CommandContext(ctx, filepath.Join(dir, "server"), "-addr", "127.0.0.1:0", "-auth-issuer", is.URL)
	stderr, err := srv.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	defer func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	}()
	srvLog := watchLines(stderr)
	url := srvLog.wait(ctx, t, "serving MCP log line", func(l string) string {
		if _, u, ok := strings.Cut(l, "url="); ok && strings.Contains(l, "serving MCP") {
			return strings.TrimSpace(u)
		}
		return ""
	})

	// Without -login: the 401 is the client's error.
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "client"), "-url", url, "-timeout", "20s").CombinedOutput()
	require.Falsef(t, err == nil || !strings.Contains(string(out), "401"), "a client without a token: %v\n%s", err, out)

	// With -login: the client prints the authorization URL and waits for the redirect.
	cl := exec.CommandContext(ctx, filepath.Join(dir, "client"), "-url", url, "-login", "-timeout", "60s")
	var stdout bytes.Buffer
	cl.Stdout = &stdout
	clErr, err := cl.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cl.Start())
	clLog := watchLines(clErr)
	authURL := clLog.wait(ctx, t, "authorization URL", func(l string) string {
		if strings.HasPrefix(l, is.URL+"/authorize?") {
			return l
		}
		return ""
	})
	// The browser: the issuer approves and redirects to the client's loopback listener.
	resp, err := http.Get(authURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Falsef(t, resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Authorization complete"), "the redirect page: %s %s", resp.Status, page)
	for range clLog.lines {
		// the rest of the client's log, until it exits
	}
	if err := cl.Wait(); err != nil {
		require.Fail(t, fmt.Sprintf("client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), clLog.all.String()))
	}
	require.Falsef(t, !strings.Contains(stdout.String(), "Forecast for") || !strings.Contains(stdout.String(), "Chart:"), "client output:\n%s", stdout.String())
}
