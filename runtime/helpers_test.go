package runtime

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// The helpers every test of the package shares; the external tests (runtime_test) use them
// through the exported names at the end of this file.

// testTimeout bounds every wait of a test, so that a bug fails the test instead of hanging it.
// It is never what a test measures.
const testTimeout = 30 * time.Second

// testCtx returns a context that bounds one test: it ends after testTimeout or when the test
// does.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// discardLogger is the logger of servers and clients whose logs a test does not read.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitFor polls cond every few milliseconds until it holds or d passes; it reports whether
// cond held. Every wait in these tests is bounded by it or by a context.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The same helpers for the external tests (package runtime_test, helpers_ext_test.go). Names
// exported from a _test.go file exist only in the test binary.
var (
	TestCtx       = testCtx
	DiscardLogger = discardLogger
	WaitFor       = waitFor
)

// TestTimeout is testTimeout, for the external tests.
const TestTimeout = testTimeout
