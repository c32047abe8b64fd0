package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/stretchr/testify/require"
	"io"
	"testing"
	"time"
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
		require.Falsef(t, !json.Valid(data) && (rpcErr == nil || rpcErr.Code != CodeParseError), "invalid JSON %q not refused as a parse error: %v", data, rpcErr)
		if rpcErr != nil {
			require.Falsef(t, rpcErr.Code != CodeParseError && rpcErr.Code != CodeInvalidRequest, "error code %d", rpcErr.Code)
			var id *ID
			if m != nil {
				id = m.ID
			}
			if b := encodeResponse(id, nil, rpcErr); !json.Valid(b) {
				require.Fail(t, fmt.Sprintf("error response is not JSON: %q", b))
			}
			return
		}
		kinds := 0
		for _, k := range []bool{m.isRequest(), m.isNotification(), m.isResponse()} {
			if k {
				kinds++
			}
		}
		require.Falsef(t, kinds != 1, "a message that is %d kinds at once: %+v", kinds, m)
		require.Falsef(t, m.JSONRPC != jsonrpcVersion, "accepted jsonrpc %q", m.JSONRPC)
		if m.ID != nil {
			require.Falsef(t, !json.Valid([]byte(m.ID.raw)) || (m.ID.raw[0] != '"' && m.ID.raw[0] != '-' && (m.ID.raw[0] < '0' || m.ID.raw[0] > '9')), "accepted id %q", m.ID.raw)
			if b := encodeResponse(m.ID, json.RawMessage(`{}`), nil); !json.Valid(b) {
				require.Fail(t, fmt.Sprintf("response is not JSON: %q", b))
			}
		}
		require.Falsef(t, len(m.Params) > 0 && m.Params[0] != '{' && string(m.Params) != "null", "accepted params %q", m.Params)
		// What was accepted survives a round trip.
		out, err := json.Marshal(m)
		require.NoError(t, err, "re-encode")
		if _, e := decodeMessage(out); e != nil {
			require.Fail(t, fmt.Sprintf("re-encoded message %s refused: %s", out, e.Message))
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
		WithLogger(discardLogger()))
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
			raw, done, err := c.consume(ctx, st, &id, io.NopCloser(bytes.NewReader(data)), co, &streamCursor{}, &dispatcher{}, nil)
			ch <- out{raw, done, err}
		}()
		select {
		case o := <-ch:
			require.Falsef(t, o.done && o.err == nil && len(o.raw) > 0 && !json.Valid(o.raw), "returned a result that is not JSON: %q", o.raw)
		case <-time.After(10 * time.Second):
			require.Fail(t, "the client's SSE reader hung on this body")
		}
	})
}
