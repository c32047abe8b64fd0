module github.com/protomcp/protomcp/grpcmcp

go 1.26.0

replace github.com/protomcp/protomcp => ../

require (
	github.com/protomcp/protomcp v0.0.0-00010101000000-000000000000
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260819154853-08b0e4226688
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/tmaxmax/go-sse v0.12.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.2 // indirect
)

tool google.golang.org/grpc/cmd/protoc-gen-go-grpc
