module github.com/protomcp/protomcp

go 1.26

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/tmaxmax/go-sse v0.12.0
	go.uber.org/goleak v1.3.0
	google.golang.org/protobuf v1.36.12
)

require golang.org/x/text v0.14.0 // indirect
