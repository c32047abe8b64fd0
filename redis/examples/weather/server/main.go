// Command server is the weather example server (examples/weather/server) with one more flag,
// -redis: with it, the process is a replica that shares its sessions, stream events and
// notifications with the other replicas using the same Redis, so that several of them behind
// one load balancer serve as one (docs/deploy.md).
//
//	go run ./examples/weather/server -addr 127.0.0.1:8081 -redis redis://127.0.0.1:6379/0
//	go run ./examples/weather/server -addr 127.0.0.1:8082 -redis redis://127.0.0.1:6379/0
//
// With -rate-limit N/m as well, the replicas share each caller's quota through Redis: N calls
// a minute for the whole set, whichever replica serves them.
//
// It lives in the redis module (run it from redis/), so that go-redis stays out of the root
// module.
package main

import (
	"flag"
	"log/slog"

	"github.com/protomcp/protomcp/examples/weather/servercmd"
	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
)

func main() {
	var url string
	servercmd.Main(servercmd.Extension{
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&url, "redis", "", "share state with the other replicas through this Redis (redis://host:port/db)")
		},
		Options: func(log *slog.Logger) ([]runtime.ServerOption, func(), error) {
			if url == "" {
				return nil, nil, nil
			}
			store, err := redismcp.Dial(url, redismcp.Options{})
			if err != nil {
				return nil, nil, err
			}
			log.Info("sharing state through Redis", "redis", url)
			// The rate limits (-rate-limit) too: one quota per caller for all the replicas.
			opts := append(store.ServerOptions(), runtime.WithRateLimit(runtime.RateLimitStore(store.Limiter())))
			return opts, func() { _ = store.Close() }, nil
		},
	})
}
