package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/stretchr/testify/require"
	"testing"
	"unicode/utf8"
)

// FuzzScanCallToolParams checks the tools/call params scanner against encoding/json: on any
// valid JSON it either gives up (the caller then uses encoding/json) or finds exactly what
// encoding/json finds.
func FuzzScanCallToolParams(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","arguments":{"text":"hi"}}`,
		`{"name":"echo"}`,
		` { "arguments" : [1,{"a":"}"}] , "name" : "x\u00e9y" , "_meta" : {"progressToken":"p1","k":{"z":[]}} } `,
		`{"name":"a","name":"b","arguments":null,"task":{"ttl":5}}`,
		`{"NAME":"echo"}`,
		`{"name":5}`,
		`{"na\u006de":"echo"}`,
		`{"arguments":"str","_meta":null}`,
		`{}`,
		`[]`,
		`{"name":"e","arguments":{"s":"a\"b\\\\","n":-1.5e3,"t":true,"f":false,"z":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return
		}
		got, ok := scanCallToolParams(params)
		if !ok {
			return
		}
		var want CallToolParams
		require.NoErrorf(t, json.Unmarshal(params, &want), "the scanner accepted %q, which encoding/json rejects", params)
		require.Falsef(t, got.Name != want.Name, "name %q, encoding/json %q, in %q", got.Name, want.Name, params)
		require.Truef(t, sameJSON(got.Arguments, want.Arguments), "arguments %q, encoding/json %q, in %q", got.Arguments, want.Arguments, params)
		// _meta is left to requestMeta, which finds it with scanMember and decodes it once.
		require.Falsef(t, got.Meta != nil, "the scanner decoded _meta a second time: %+v", got.Meta)
		var wantMeta struct {
			Meta json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(params, &wantMeta)
		if raw, _, ok := scanMember(params, "_meta"); ok && !sameJSON(raw, wantMeta.Meta) {
			require.Fail(t, fmt.Sprintf("_meta %q, encoding/json %q, in %q", raw, wantMeta.Meta, params))
		}
	})
}

// sameJSON compares two raw values, taking absent and null as the same.
func sameJSON(a, b json.RawMessage) bool {
	norm := func(r json.RawMessage) []byte {
		r = bytes.TrimSpace(r)
		if len(r) == 0 || string(r) == "null" {
			return nil
		}
		var buf bytes.Buffer
		if json.Compact(&buf, r) != nil {
			return r
		}
		return buf.Bytes()
	}
	return bytes.Equal(norm(a), norm(b))
}

// FuzzScanMessage checks the envelope scanner against encoding/json: on any valid JSON it
// either gives up (decodeMessage then uses encoding/json) or decodes exactly the message,
// and the error, that encoding/json's path gives.
func FuzzScanMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a\"b","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":-9223372036854775808,"result":{}}`,
		`{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","ID":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}`,
		`{"jsonrpc":"1.0","method":"x","params":null}`,
		`{"jsonrpc":"2.0","method":"x","params":[1]}`,
		`{"jsonrpc":"2.0","method":"m\u0065","extra":{"a":[1,2]}}`,
		` { "jsonrpc" : "2.0" , "method" : "ping" , "id" : "7" } `,
		`{"jsonrpc":2,"method":"x"}`,
		`{}`,
		`[]`,
		// Not JSON, each in a way a scanner that trusts its input would let through.
		`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`,
		`{} x`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":01}}`,
		`{"jsonrpc":"2.0","id":1,"result":[tru]}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"k\x01\":1}",
		`{"jsonrpc":"2.0","id":1,"result":{"a":"\q"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a" 1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := scanMessage(data)
		if !json.Valid(data) {
			require.Falsef(t, ok, "scanned %q, which is not JSON: %+v", data, got)
			return
		}
		if !ok || !utf8.Valid(data) {
			return
		}
		gotErr := got.validate()
		want, wantErr := decodeMessageJSON(data)
		require.Falsef(t, (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Message != wantErr.Message, "error %v, encoding/json %v, in %q", gotErr, wantErr, data)
		require.Falsef(t, want == nil, "the scanner decoded %q, which encoding/json's path rejects with no message: %v", data, wantErr)
		require.Falsef(t, got.JSONRPC != want.JSONRPC || got.Method != want.Method || (got.ID == nil) != (want.ID == nil) ||
			got.ID != nil && got.ID.raw != want.ID.raw || got.Error != nil, "scanned %+v, encoding/json %+v, in %q", got, want, data)
		require.Falsef(t, !bytes.Equal(got.Params, want.Params) || (got.Params == nil) != (want.Params == nil), "params %q, encoding/json %q, in %q", got.Params, want.Params, data)
		require.Falsef(t, !bytes.Equal(got.Result, want.Result) || (got.Result == nil) != (want.Result == nil), "result %q, encoding/json %q, in %q", got.Result, want.Result, data)
	})
}

// FuzzScanToolResult checks the tools/call result scanner against encoding/json: on any valid
// JSON it either gives up or finds the structuredContent and isError encoding/json finds.
func FuzzScanToolResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"{\"text\":\"hi\"}"}],"structuredContent":{"text":"hi"}}`,
		`{"content":[],"isError":true}`,
		`{"isError":true,"isError":null}`,
		`{"isError":true,"isError":false}`,
		`{"structuredContent":null,"isError":"yes"}`,
		`{"StructuredContent":{"a":1}}`,
		`{"structuredContent":{"a":1},"structuredContent":[2]}`,
		`{"is\u0045rror":true}`,
		`{}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) {
			return
		}
		sc, isError, ok := scanToolResult(obj)
		if !ok {
			return
		}
		var want struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		}
		require.NoErrorf(t, json.Unmarshal(obj, &want), "the scanner accepted %q, which encoding/json rejects", obj)
		require.Falsef(t, isError != want.IsError || !bytes.Equal(sc, want.StructuredContent) || (sc == nil) != (want.StructuredContent == nil), "scanned %q %v, encoding/json %q %v, in %q", sc, isError, want.StructuredContent, want.IsError, obj)
	})
}

// BenchmarkScan measures the hand-written scanners of the hot path on the messages of an echo
// call: the request's envelope and params, the answer's envelope and result.
func BenchmarkScan(b *testing.B) {
	req := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"},"_meta":{"progressToken":"p1"}}}`)
	res := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"text\":\"hello, world\"}"}],"structuredContent":{"text":"hello, world"},"isError":false}}`)
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, ok := scanMessage(req)
			if !ok {
				b.Fatal("scanMessage")
			}
			if _, ok := scanCallToolParams(m.Params); !ok {
				b.Fatal("scanCallToolParams")
			}
		}
	})
	b.Run("result", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, ok := scanMessage(res)
			if !ok {
				b.Fatal("scanMessage")
			}
			if _, _, ok := scanToolResult(m.Result); !ok {
				b.Fatal("scanToolResult")
			}
		}
	})
}
