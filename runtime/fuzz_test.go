package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
)

// FuzzDecodeMessage feeds arbitrary bytes to the JSON-RPC decoder both sides use. It must
// never panic; what it accepts must be exactly one kind of message with a sane envelope, and
// any error must be encodable as a response that is itself valid JSON.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":null}]},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":[1]}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":[1],"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
		`{"jsonrpc":"2.0","id":99999999999999999999,"method":"x"}`,
		`{"jsonrpc":"2.0","id":"\u0000","method":"x","params":null}`,
		`null`, ``, `{`, `"x"`, `{"id":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, rpcErr := decodeMessage(data)
		if rpcErr != nil {
			if rpcErr.Code != CodeParseError && rpcErr.Code != CodeInvalidRequest {
				t.Fatalf("error code %d", rpcErr.Code)
			}
			var id *ID
			if m != nil {
				id = m.ID
			}
			if b := encodeResponse(id, nil, rpcErr); !json.Valid(b) {
				t.Fatalf("error response is not JSON: %q", b)
			}
			return
		}
		kinds := 0
		for _, k := range []bool{m.isRequest(), m.isNotification(), m.isResponse()} {
			if k {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("a message that is %d kinds at once: %+v", kinds, m)
		}
		if m.JSONRPC != jsonrpcVersion {
			t.Fatalf("accepted jsonrpc %q", m.JSONRPC)
		}
		if m.ID != nil {
			if !json.Valid([]byte(m.ID.raw)) || (m.ID.raw[0] != '"' && m.ID.raw[0] != '-' && (m.ID.raw[0] < '0' || m.ID.raw[0] > '9')) {
				t.Fatalf("accepted id %q", m.ID.raw)
			}
			if b := encodeResponse(m.ID, json.RawMessage(`{}`), nil); !json.Valid(b) {
				t.Fatalf("response is not JSON: %q", b)
			}
		}
		if len(m.Params) > 0 && m.Params[0] != '{' && string(m.Params) != "null" {
			t.Fatalf("accepted params %q", m.Params)
		}
		// What was accepted survives a round trip.
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, e := decodeMessage(out); e != nil {
			t.Fatalf("re-encoded message %s refused: %s", out, e.Message)
		}
	})
}

// FuzzClientSSE feeds an arbitrary server body to the client's SSE reading code (the
// streamReader, go-sse's parser and the dispatch of what it finds) as the answer to request
// 1. It must never panic or hang: it returns within a bound with the response, an error, or
// "ended early"; and a result it returns is JSON. Requests in the body are answered by POSTs
// to a closed loopback port, which fail at once.
func FuzzClientSSE(f *testing.F) {
	for _, s := range []string{
		"id: 1_0\nretry: 1000\ndata: \n\nevent: message\nid: 1_1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"event: message\nid: 1_1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p1\",\"progress\":1}}\n\nid: 1_2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"x\"}}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"roots/list\"}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}\r\n\r\n",
		"retry: 99999999999999999999\n: comment\nevent: other\ndata: x\n\n",
		"data: {\"jsonrpc\":\"2.0\",\n data: \"id\":1}\n\n",
		"id: \x00\ndata: {}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":1}}\n\n",
		"retry: 5\rdata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\r\r",
		"",
		"\n\n\n",
	} {
		f.Add([]byte(s))
	}
	c := NewClient("http://127.0.0.1:1/mcp", WithMaxEventSize(1<<16), WithDrainLimits(1<<16, time.Second),
		WithLogHandler(func(context.Context, *LogMessageParams) {}),
		WithNotificationHandler(func(context.Context, string, json.RawMessage) {}),
		WithRootsHandler(func(context.Context) (*ListRootsResult, error) { return &ListRootsResult{}, nil }),
		WithClientLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	f.Cleanup(func() { _ = c.Close(context.Background()) })
	st := &clientSession{id: "fuzz", version: LatestProtocolVersion}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		id := IntID(1)
		co := newCallOptions([]CallOption{WithProgress(func(*ProgressParams) {})})
		co.progressToken = json.RawMessage(`"p1"`)
		type out struct {
			raw  json.RawMessage
			done bool
			err  error
		}
		ch := make(chan out, 1)
		go func() {
			raw, done, err := c.consume(ctx, st, &id, io.NopCloser(bytes.NewReader(data)), co, &streamCursor{}, &dispatcher{})
			ch <- out{raw, done, err}
		}()
		select {
		case o := <-ch:
			if o.done && o.err == nil && len(o.raw) > 0 && !json.Valid(o.raw) {
				t.Fatalf("returned a result that is not JSON: %q", o.raw)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the client's SSE reader hung on this body")
		}
	})
}

// FuzzResultJSON compares the fast writer of typed results (appendResultJSON) with
// protojson, which it must match member for member and value for value, on messages decoded
// from arbitrary wire bytes: the weather results (maps, enums, repeated messages, timestamps,
// doubles), mcp.v1 messages (int64, bytes, oneofs) and descriptor.proto (proto2 presence,
// every scalar kind). Where protojson fails, so must it.
func FuzzResultJSON(f *testing.F) {
	days := []*weatherv1.DailyForecast{{Date: "2025-06-01", High: 21.5, Low: -3e-7, Condition: weatherv1.Condition_CONDITION_RAIN, PrecipitationChance: map[string]int32{"morning": 80, "night": 0}}}
	seeds := []proto.Message{
		&weatherv1.GetForecastResponse{Place: &weatherv1.Place{Name: "Paris", Coordinates: &weatherv1.Coordinates{Latitude: 48.85, Longitude: math.Inf(-1)}}, Days: days, IssuedAt: timestamppb.New(time.Date(2025, 6, 1, 9, 0, 0, 5000, time.UTC)), Unit: weatherv1.TemperatureUnit_TEMPERATURE_UNIT_FAHRENHEIT},
		&weatherv1.ListAlertsResponse{Alerts: []*weatherv1.Alert{{Id: "a\u2028\"<>&", Severity: weatherv1.Severity_SEVERITY_SEVERE, StartsAt: &timestamppb.Timestamp{Seconds: -62135596800}}}},
		&mcpv1.ResourceLink{Uri: "file:///x", Size: proto.Int64(-1 << 63)},
		&descriptorpb.FileDescriptorProto{Name: proto.String("x.proto"), MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M"), Field: []*descriptorpb.FieldDescriptorProto{{Number: proto.Int32(-5), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(), Proto3Optional: proto.Bool(false)}}}}, Options: &descriptorpb.FileOptions{JavaMultipleFiles: proto.Bool(true)}},
	}
	for i, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(i), b)
	}
	f.Fuzz(func(t *testing.T, which byte, wire []byte) {
		var m proto.Message
		switch which % 5 {
		case 0:
			m = &weatherv1.GetForecastResponse{}
		case 1:
			m = &weatherv1.ListAlertsResponse{}
		case 2:
			m = &mcpv1.ResourceLink{}
		case 3:
			m = &weatherv1.DailyForecast{}
		default:
			m = &descriptorpb.FileDescriptorProto{}
		}
		if err := proto.Unmarshal(wire, m); err != nil {
			return
		}
		want, wantErr := protojson.Marshal(m)
		got, gotErr := appendResultJSON(nil, m)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("protojson error %v, fast writer error %v, for %v", wantErr, gotErr, m)
		}
		if wantErr != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("not JSON: %s", got)
		}
		decode := func(b []byte) any {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var v any
			if err := d.Decode(&v); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			return v
		}
		if g, w := decode(got), decode(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("the fast writer differs from protojson:\n got %s\nwant %s", got, want)
		}
	})
}
