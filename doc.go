// Package protomcp is the root of the protomcp module, a Go SDK for the Model Context Protocol
// in the style of connect-go and grpc-go. It holds no API of its own: protoc-gen-mcp
// (cmd/protoc-gen-mcp) generates typed MCP clients and servers from protobuf services, and
// they run on package runtime (github.com/protomcp/protomcp/runtime). The README's quick start
// is tested here, by running it as written in a fresh module.
package protomcp
