module github.com/protomcp/protomcp/connectmcp

go 1.26.0

replace github.com/protomcp/protomcp => ../

require (
	connectrpc.com/connect v1.21.1
	github.com/protomcp/protomcp v0.0.0-00010101000000-000000000000
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260819154853-08b0e4226688
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/tmaxmax/go-sse v0.12.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

tool connectrpc.com/connect/cmd/protoc-gen-connect-go
