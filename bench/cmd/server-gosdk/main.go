// Command server-gosdk serves the benchmark tools with the official go-sdk.
//
//	server-gosdk -addr 127.0.0.1:8082 [-json]
package main

import (
	"flag"
	"net/http"

	"github.com/protomcp/protomcp/bench/internal/servers"
)

func main() {
	servers.Main("server-gosdk", func(fs *flag.FlagSet) func() http.Handler {
		jsonResponse := fs.Bool("json", false, "answer JSON instead of go-sdk's default SSE stream")
		stateless := fs.Bool("stateless", false, "serve MCP 2026-07-28 (go-sdk's Stateless mode)")
		return func() http.Handler { return servers.GoSDK(*jsonResponse, *stateless) }
	})
}
