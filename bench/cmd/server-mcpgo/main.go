// Command server-mcpgo serves the benchmark tools with mcp-go.
//
//	server-mcpgo -addr 127.0.0.1:8083
package main

import (
	"flag"
	"net/http"

	"github.com/protomcp/protomcp/bench/internal/servers"
)

func main() {
	servers.Main("server-mcpgo", func(*flag.FlagSet) func() http.Handler {
		return servers.MCPGo
	})
}
