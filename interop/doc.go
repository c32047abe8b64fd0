// Package interop tests protomcp against the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in ts/package.json and ts/package-lock.json).
//
// The tests run the weather example both ways: the SDK's Client (ts/client.mjs) against the Go
// server, and the generated Go client against an SDK McpServer (ts/server.mjs) serving the
// same tools. They need Node.js 20 or newer and npm on PATH; the first run installs the npm
// packages into ts/node_modules with npm ci.
//
//	go test -race ./interop/
package interop
