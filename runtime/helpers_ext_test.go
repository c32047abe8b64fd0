package runtime_test

import "github.com/protomcp/protomcp/runtime"

// The helpers every external test of the package (runtime_test) shares: those of the internal
// tests (helpers_test.go), under the same names.
var (
	testCtx       = runtime.TestCtx
	discardLogger = runtime.DiscardLogger
	waitFor       = runtime.WaitFor
)

// testTimeout bounds every wait of a test, so that a bug fails the test instead of hanging it.
const testTimeout = runtime.TestTimeout
