// Command server-protomcp serves the benchmark tools with protomcp (the generated handler).
// With -redis, it is a replica sharing its sessions, events and notifications with the others
// on the same Redis (the redis module).
//
//	server-protomcp -addr 127.0.0.1:8081 [-sse] [-redis redis://127.0.0.1:6379/0]
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/protomcp/protomcp/bench/internal/servers"
	redismcp "github.com/protomcp/protomcp/redis"
)

func main() {
	servers.Main("server-protomcp", func(fs *flag.FlagSet) func() http.Handler {
		sse := fs.Bool("sse", false, "answer every call with an SSE stream instead of JSON")
		redisURL := fs.String("redis", "", "share state with the other replicas through this Redis")
		return func() http.Handler {
			if *redisURL == "" {
				return servers.Protomcp(*sse)
			}
			store, err := redismcp.Dial(*redisURL, redismcp.Options{})
			if err != nil {
				fmt.Fprintln(os.Stderr, "server-protomcp:", err)
				os.Exit(1)
			}
			return servers.Protomcp(*sse, store.ServerOptions()...)
		}
	})
}
