// Package gosdk tests protomcp against the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk, pinned in go.mod), era by era: the SDK's client,
// with its default options (it negotiates MCP 2026-07-28 with server/discover), against the
// weather and conformance example servers; and protomcp's client against SDK servers in
// 2026-07-28 mode (StreamableHTTPOptions.Stateless) and in 2025-11-25 mode. Every test checks
// the protocol version the two sides agreed on, not only that a call worked.
//
// It is its own module, so that the SDK stays out of protomcp's go.mod:
//
//	cd interop/gosdk && go test -race ./...
package gosdk
