package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/protomcp/protomcp/runtime"
)

// TestModernClientRetriesRefusedVersion: a first server/discover refused with an
// UnsupportedProtocolVersionError that lists the version sent is retried once with it, and a
// second refusal ends the attempt (spec 2026-07-28, Versioning).
func TestModernClientRetriesRefusedVersion(t *testing.T) {
	for _, refusals := range []int{1, 2} {
		var posts atomic.Int32
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if !assert.NoError(t, json.NewDecoder(r.Body).Decode(&msg)) {
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if int(posts.Add(1)) <= refusals {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}`))
				return
			}
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"serverInfo":{"name":"s","version":"1"},"ttlMs":0,"cacheScope":"private"}}`))
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c := runtime.NewClient(hs.URL, runtime.WithEra(runtime.EraModern))
		err := c.Connect(ctx)
		if refusals == 1 {
			require.NoError(t, err, "one refusal")
			assert.Equal(t, runtime.ProtocolVersion20260728, c.ProtocolVersion())
		} else {
			require.Error(t, err, "two refusals")
			assert.Equal(t, runtime.CodeUnsupportedProtocolVersion, runtime.CodeOf(err), "%v", err)
		}
		assert.Equal(t, int32(min(refusals+1, 2)), posts.Load(), "server/discover requests with %d refusals", refusals)
		_ = c.Close(ctx)
		cancel()
		hs.Close()
	}
}
