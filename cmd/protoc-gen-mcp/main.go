// Command protoc-gen-mcp is a protoc/buf plugin that turns protobuf services into MCP tools:
// for each service it writes typed clients and server handler interfaces that run on
// github.com/protomcp/protomcp/runtime, with each tool's JSON Schemas computed at generate time.
//
// Install it with
//
//	go get -tool github.com/protomcp/protomcp/cmd/protoc-gen-mcp
//
// and use it from buf.gen.yaml:
//
//	plugins:
//	  - local: ["go", "tool", "protoc-gen-mcp"]
//	    out: gen
//	    opt: paths=source_relative
//
// Parameters (opt:):
//
//	package_suffix=mcp  the generated Go package is the .pb.go package's name plus this
//	                    suffix, in a subdirectory of the same name; empty writes next to .pb.go
//	paths=...           as for protoc-gen-go (import or source_relative)
//	max_schema_bytes=N  the largest JSON Schema a tool may have (default 262144); a larger one
//	                    is a generate-time error
//	skeleton=true       also write <file>.skeleton.go.txt beside the generated code: a starter
//	                    server (every method stubbed, a main serving HTTP or stdio) to copy out
//	manifest=true       also write <file>.mcp.json beside <file>.mcp.go: every tool, prompt and
//	                    resource with its schemas, for the protomcp command (lint, breaking,
//	                    registry); see docs/contract.md
//	include=PATTERN     only the rpcs whose full name (pkg.Service.Method) matches PATTERN
//	                    (path.Match: * for any run of characters; several with |, or repeat it)
//	exclude=PATTERN     not the rpcs whose full name matches PATTERN
//	read_only=true      only the read-only rpcs (idempotency_level NO_SIDE_EFFECTS or
//	                    read_only_hint) become tools; prompts and resources stay
//	tool_prefix=P       P before every tool name: several services' tools on one server
//	warn_undocumented   (default true) warn on stderr about rpcs and request fields without a
//	                    comment: descriptions are what the model reads
//	grpc=true           also write <file>.mcp_grpc.go beside <file>.mcp.go:
//	                    Register<Service>GRPCServer, which serves the grpc-go implementation of
//	                    the service (protoc-gen-go-grpc v1.4 or later) through its interceptors,
//	                    with github.com/protomcp/protomcp/grpcmcp; see docs/grpc.md
//	connect=true        also write <file>.mcp_connect.go beside <file>.mcp.go:
//	                    Register<Service>ConnectHandler, which serves the connect-go (v1)
//	                    implementation of the service through its own handler and
//	                    interceptors, and Forward<Service>ToConnect, with
//	                    github.com/protomcp/protomcp/connectmcp; see docs/grpc.md
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"google.golang.org/protobuf/compiler/protogen"
)

// version is reported by --version when the binary carries no module version (a local build).
const version = "0.1.0-dev"

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println("protoc-gen-mcp", buildVersion())
		return
	}
	if len(os.Args) == 2 && (os.Args[1] == "--help" || os.Args[1] == "-h") {
		fmt.Fprintln(os.Stderr, "protoc-gen-mcp is a protoc/buf plugin; run it through buf generate or protoc --mcp_out.")
		fmt.Fprintln(os.Stderr, "Parameters: package_suffix=<suffix> (default \"mcp\"), paths=import|source_relative, max_schema_bytes=<n> (default 262144), skeleton=true|false, manifest=true|false, grpc=true|false, connect=true|false, include=<pattern>, exclude=<pattern>, read_only=true|false, tool_prefix=<prefix>, warn_undocumented=true|false.")
		os.Exit(2)
	}
	var flags flag.FlagSet
	cfg := newConfig(&flags)
	protogen.Options{ParamFunc: flags.Set}.Run(withManifest(&flags, cfg))
}

func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}
