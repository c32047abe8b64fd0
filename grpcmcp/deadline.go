package grpcmcp

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/protomcp/protomcp/runtime"
)

// PropagateDeadline returns a client interceptor (runtime.WithInterceptors on a
// runtime.Client) that sends the time left of each tools/call's context in its _meta under
// MetaTimeout, as gRPC sends grpc-timeout: a bridged handler then runs under the caller's
// deadline rather than the server's handler timeout alone. MCP itself carries no deadline.
func PropagateDeadline() runtime.Interceptor {
	return runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
		return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
			if d, ok := ctx.Deadline(); ok && req.Method == "tools/call" {
				ms := time.Until(d).Milliseconds()
				if ms < 1 {
					ms = 1
				}
				// A copy: the request's _meta may be the caller's, shared by its calls.
				meta := &runtime.RequestMeta{Other: map[string]json.RawMessage{}}
				if req.Meta != nil {
					meta.ProgressToken = req.Meta.ProgressToken
					for k, v := range req.Meta.Other {
						meta.Other[k] = v
					}
				}
				meta.Other[MetaTimeout] = json.RawMessage(strconv.FormatInt(ms, 10))
				req.Meta = meta
			}
			return next(ctx, req)
		}
	})
}
