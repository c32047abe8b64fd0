// Package runtime is the Streamable HTTP runtime that protomcp's generated code runs on: an
// MCP server (an http.Handler) and an MCP client, plus the generic glue that turns protobuf
// messages into tool arguments and results.
package runtime

// SupportPackageIsVersion1 is referenced by generated code to make sure it is compiled against
// a compatible runtime. A new major change to the generated code's contract adds
// SupportPackageIsVersion2 and, eventually, removes this one.
const SupportPackageIsVersion1 = true

// Version is the version of the protomcp runtime, reported as the implementation version.
const Version = "0.1.0"
