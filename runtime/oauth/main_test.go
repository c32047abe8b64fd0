package oauth

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (a loopback redirect listener, a
// client's stream, an idle connection) outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
