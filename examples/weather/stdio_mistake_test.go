package weather_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// The mistakes a new user makes launching a stdio server get errors that say what happened:
// a server that exits is reported with its exit status and the end of its stderr; one started
// without -stdio (it serves HTTP, and writes nothing to stdout) with a question about its mode
// and the end of its stderr.
func TestStdioServerBinaryMistakes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "weather-server")
	if out, err := exec.Command("go", "build", "-o", bin, "./server").CombinedOutput(); err != nil {
		t.Fatalf("go build ./server: %v\n%s", err, out)
	}
	t.Run("exits", func(t *testing.T) {
		c, err := runtime.NewCommandClient(exec.Command(bin, "-stdio", "-no-such-flag"))
		require.NoError(t, err)
		ctx := testCtx(t)
		err = c.Connect(ctx)
		require.Error(t, err)
		t.Log(err)
		assert.Contains(t, err.Error(), "the stdio server "+bin+" -stdio -no-such-flag exited (exit status 2)")
		assert.Contains(t, err.Error(), "flag provided but not defined: -no-such-flag")
		require.NoError(t, c.Close(ctx))
	})
	t.Run("without -stdio", func(t *testing.T) {
		c, err := runtime.NewCommandClient(exec.Command(bin, "-addr", "127.0.0.1:0"), runtime.WithStdioShutdown(100*time.Millisecond, 10*time.Second))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(testCtx(t), 3*time.Second)
		defer cancel()
		err = c.Connect(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		t.Log(err)
		assert.Contains(t, err.Error(), "has written nothing to its stdout: was it started in its stdio mode?")
		assert.Contains(t, err.Error(), "serving MCP", "the end of its stderr")
		closeCtx, cancelClose := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancelClose()
		require.NoError(t, c.Close(closeCtx), "it exits on SIGTERM")
	})
}
