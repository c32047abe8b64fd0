// Command server-protomcp serves the benchmark tools with protomcp (the generated handler).
//
//	server-protomcp -addr 127.0.0.1:8081 [-sse]
package main

import (
	"flag"
	"net/http"

	"github.com/protomcp/protomcp/bench/internal/servers"
)

func main() {
	servers.Main("server-protomcp", func(fs *flag.FlagSet) func() http.Handler {
		sse := fs.Bool("sse", false, "answer every call with an SSE stream instead of JSON")
		return func() http.Handler { return servers.Protomcp(*sse) }
	})
}
