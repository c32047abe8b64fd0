package protojsonfast

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	contractv1 "github.com/protomcp/protomcp/gen/contract/v1"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// TestDecoder: the common forms are decoded without protojson, to what protojson decodes;
// everything else is refused, for protojson to decode.
func TestDecoder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		msg  proto.Message
		json string
		fast bool
	}{
		{"text", &mcpv1.TextContent{}, `{"text":"the quick brown fox"}`, true},
		{"empty object", &mcpv1.TextContent{}, ` { } `, true},
		{"escapes", &mcpv1.TextContent{}, `{"text":"a\"b\\c\/d\n\t\u00e9\u4e2d"}`, true},
		{"utf-8", &mcpv1.TextContent{}, `{"text":"Zürich 中文 🌍"}`, true},
		{"white space", &mcpv1.TextContent{}, "\n{ \"text\" :\t\"x\" }\r\n", true},
		{"scalars", &contractv1.EchoRequest{}, `{"count":-7,"flag":true,"name":"n","ratio":0.5,"weight":1.25e2}`, true},
		{"zero values", &contractv1.EchoRequest{}, `{"count":0,"flag":false,"name":"","ratio":0}`, true},
		{"int32 bounds", &contractv1.EchoRequest{}, `{"count":2147483647}`, true},
		{"point", &contractv1.Point{}, `{"latitude":47.37,"longitude":-8.54}`, true},
		{"enum", &contractv1.EchoRequest{}, `{"color":"COLOR_RED","mode":"MODE_FIRST"}`, true},
		{"oneof", &contractv1.EchoRequest{}, `{"email":"a@b.c"}`, true},
		{"oneof and optional", &contractv1.EchoRequest{}, `{"email":"a@b.c","ratio":0.5}`, true},

		{"int32 overflow", &contractv1.EchoRequest{}, `{"count":2147483648}`, false},
		{"int32 as a string", &contractv1.EchoRequest{}, `{"count":"5"}`, false},
		{"int32 with a fraction", &contractv1.EchoRequest{}, `{"count":1.0}`, false},
		{"int32 with an exponent", &contractv1.EchoRequest{}, `{"count":1e2}`, false},
		{"float overflow", &contractv1.EchoRequest{}, `{"weight":1e39}`, false},
		{"double NaN string", &contractv1.EchoRequest{}, `{"ratio":"NaN"}`, false},
		{"int64", &contractv1.EchoRequest{}, `{"big":"5"}`, false},
		{"enum by number", &contractv1.EchoRequest{}, `{"color":1}`, false},
		{"unknown enum name", &contractv1.EchoRequest{}, `{"color":"COLOR_BLUE"}`, false},
		{"enum name escaped", &contractv1.EchoRequest{}, `{"color":"COLOR\u005fRED"}`, false},
		{"enum null", &contractv1.EchoRequest{}, `{"color":null}`, false},
		{"repeated", &contractv1.EchoRequest{}, `{"tags":["a"]}`, false},
		{"nested", &contractv1.EchoRequest{}, `{"home":{"city":"x"}}`, false},
		{"oneof member message", &contractv1.EchoRequest{}, `{"postal":{}}`, false},
		{"oneof null", &contractv1.EchoRequest{}, `{"email":null}`, false},
		{"proto name", &contractv1.EchoRequest{}, `{"by_code":{}}`, false},
		{"unknown", &mcpv1.TextContent{}, `{"txt":"x"}`, false},
		{"twice", &mcpv1.TextContent{}, `{"text":"x","text":"y"}`, false},
		{"null", &mcpv1.TextContent{}, `{"text":null}`, false},
		{"wrong type", &mcpv1.TextContent{}, `{"text":5}`, false},
		{"bool as a string", &contractv1.EchoRequest{}, `{"flag":"true"}`, false},
		{"surrogate pair", &mcpv1.TextContent{}, `{"text":"\ud83c\udf0d"}`, false},
		{"escaped key", &mcpv1.TextContent{}, `{"\u0074ext":"x"}`, false},
		{"not an object", &mcpv1.TextContent{}, `["text"]`, false},
		{"well-known type", &timestamppb.Timestamp{}, `{"seconds":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.True(t, json.Valid([]byte(tc.json)), "the test's JSON")
			d := NewDecoder(tc.msg.ProtoReflect().Descriptor())
			got := tc.msg.ProtoReflect().New().Interface()
			fast := d != nil && d.Unmarshal([]byte(tc.json), got)
			require.Equal(t, tc.fast, fast, "decoded without protojson")
			if !fast {
				return
			}
			want := tc.msg.ProtoReflect().New().Interface()
			require.NoError(t, protojson.Unmarshal([]byte(tc.json), want), "protojson")
			assert.Empty(t, cmp.Diff(want, got, protocmp.Transform()), "against protojson")
		})
	}
}

// FuzzDecoderMatchesProtojson: whatever the decoder accepts, protojson accepts too, with the
// same result.
func FuzzDecoderMatchesProtojson(f *testing.F) {
	for _, s := range []string{
		`{"text":"x"}`, `{"count":1,"flag":true,"name":"a\u00e9","ratio":-0.5e-3,"weight":3}`,
		`{"latitude":1,"longitude":2}`, `{"count":-2147483648}`, `{"name":"\\\"\/"}`, `{}`,
	} {
		for kind := range uint8(3) {
			f.Add(kind, s)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, s string) {
		if !json.Valid([]byte(s)) {
			return // the runtime decodes arguments from a message already checked
		}
		var m proto.Message
		switch kind % 3 {
		case 0:
			m = &mcpv1.TextContent{}
		case 1:
			m = &contractv1.EchoRequest{}
		default:
			m = &contractv1.Point{}
		}
		got := m.ProtoReflect().New().Interface()
		if !NewDecoder(m.ProtoReflect().Descriptor()).Unmarshal([]byte(s), got) {
			return
		}
		want := m.ProtoReflect().New().Interface()
		require.NoErrorf(t, protojson.Unmarshal([]byte(s), want), "the decoder took %s, which protojson refuses", s)
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			require.Fail(t, fmt.Sprintf("%s: the decoder and protojson differ (-protojson +decoder):\n%s", s, diff))
		}
	})
}

func BenchmarkDecoder(b *testing.B) {
	data := []byte(`{"text":"the quick brown fox jumps over the lazy dog"}`)
	d := NewDecoder((&mcpv1.TextContent{}).ProtoReflect().Descriptor())
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !d.Unmarshal(data, &mcpv1.TextContent{}) {
				b.Fatal("refused") // if and b.Fatal: testify's call would be measured
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := protojson.Unmarshal(data, &mcpv1.TextContent{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
