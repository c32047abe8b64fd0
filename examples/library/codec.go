package library

import (
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// strictJSON is the Connect JSON codec of the library's handler: it refuses fields the
// message does not have, as MCP does with a tool's arguments (connect-go's own JSON codec
// drops them), so that a typo is an error on every protocol that carries JSON. Binary
// protobuf (gRPC, gRPC-Web, Connect with application/proto) keeps unknown fields, as
// protobuf's compatibility rules want.
type strictJSON struct{ name string }

// StrictJSON returns the handler options that install strictJSON for both names connect-go
// gives JSON.
func StrictJSON() connect.HandlerOption {
	return connect.WithHandlerOptions(connect.WithCodec(strictJSON{"json"}), connect.WithCodec(strictJSON{"json; charset=utf-8"}))
}

func (c strictJSON) Name() string { return c.name }

func (c strictJSON) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("strict JSON codec: %T is not a proto.Message", v)
	}
	return protojson.Marshal(m)
}

func (c strictJSON) Unmarshal(b []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("strict JSON codec: %T is not a proto.Message", v)
	}
	if len(b) == 0 {
		proto.Reset(m)
		return nil
	}
	return protojson.UnmarshalOptions{}.Unmarshal(b, m)
}
