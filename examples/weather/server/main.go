// Command server serves the example WeatherService as an MCP server over Streamable HTTP, or
// over stdio for a host that launches it (Claude Desktop, VS Code, the MCP Inspector).
//
//	go run ./examples/weather/server -addr 127.0.0.1:8081 -path /mcp
//	go run ./examples/weather/server -stdio
//
// With -auth-issuer, it is an OAuth 2.1 protected resource: every request needs a JWT access
// token from that issuer whose audience is -auth-audience (by default the server's URL), and
// it serves its Protected Resource Metadata (RFC 9728) for clients to discover the issuer:
//
//	go run ./examples/weather/server -auth-issuer https://auth.example.com
//
// The same server as a replica sharing its state with others through Redis is
// redis/examples/weather/server (its -redis flag; see docs/deploy.md).
package main

import "github.com/protomcp/protomcp/examples/weather/servercmd"

func main() { servercmd.Main(servercmd.Extension{}) }
