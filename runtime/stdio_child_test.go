package runtime

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// testChildEnv names the variable that turns the test binary into a stdio server child.
const testChildEnv = "PROTOMCP_TEST_CHILD"

// runTestChild serves MCP over stdin/stdout as the stdio client tests' child process, in one
// of these modes:
//   - serve: an echo tool, until stdin ends or SIGTERM;
//   - junk: writes lines that are not JSON-RPC to stdout first, then serves;
//   - exit-early: exits with status 3 after reading its first message, answering nothing;
//   - ignore-term: serves, then ignores stdin's end and SIGTERM, so that only SIGKILL ends it;
//   - banner: writes a line that is not JSON-RPC to stdout, as a server that is not in its
//     stdio mode would, and answers nothing until stdin ends;
//   - flood: writes floodLines lines that are not JSON-RPC to stdout and floodLines/10 lines
//     to stderr first, then serves.
func runTestChild(mode string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s := NewServer(Implementation{Name: "stdio-child", Version: "1"}, WithLogger(log))
	AddTypedTool(s, ToolSpec{Name: "echo"}, func(ctx context.Context, in *mcpv1.TextContent) (*mcpv1.TextContent, error) {
		if in.GetText() == "slow" {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Minute):
			}
		}
		return &mcpv1.TextContent{Text: in.GetText()}, nil
	})
	fmt.Fprintln(os.Stderr, "child started in mode", mode)
	switch mode {
	case "junk":
		fmt.Fprintln(os.Stdout, "this is not JSON")
		fmt.Fprintln(os.Stdout, `{"neither": "is this a message"`)
	case "flood":
		writeLines(os.Stdout, "not a JSON-RPC message", floodLines)
		writeLines(os.Stderr, "a line of the server's log", floodLines/10)
	case "exit-early":
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf)
		return 3
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "banner":
		fmt.Fprintln(os.Stdout, "listening on http://127.0.0.1:8080/mcp")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if mode == "ignore-term" {
		ctx = context.Background()
	}
	err := s.ServeStdio(ctx, os.Stdin, os.Stdout)
	if mode == "ignore-term" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// floodLines is how many lines that are not messages the flood child writes to stdout.
const floodLines = 1_000_000

// writeLines writes n numbered lines of text to w, in large writes.
func writeLines(w io.Writer, text string, n int) {
	bw := bufio.NewWriterSize(w, 64<<10)
	for i := range n {
		fmt.Fprintf(bw, "%s %d\n", text, i)
	}
	_ = bw.Flush()
}
