package runtime

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (a handler, a stream writer, a client
// drain, an idle connection) outlives them: every test closes its clients and servers and
// calls Server.Shutdown in its cleanup.
//
// With PROTOMCP_TEST_CHILD set, the test binary is instead a stdio MCP server that the stdio
// client tests launch as a real child process (see stdio_child_test.go).
func TestMain(m *testing.M) {
	if mode := os.Getenv(testChildEnv); mode != "" {
		os.Exit(runTestChild(mode))
	}
	goleak.VerifyTestMain(m)
}
