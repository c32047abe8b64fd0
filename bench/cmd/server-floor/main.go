// Command server-floor serves the floor: a plain net/http JSON echo POST at /mcp, no MCP.
//
//	server-floor -addr 127.0.0.1:8080
package main

import (
	"flag"
	"net/http"

	"github.com/protomcp/protomcp/bench/internal/servers"
)

func main() {
	servers.Main("server-floor", func(*flag.FlagSet) func() http.Handler {
		return servers.Floor
	})
}
