package runtime

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (a handler, a stream writer, a client
// drain, an idle connection) outlives them: every test closes its clients and servers and
// calls Server.Shutdown in its cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
