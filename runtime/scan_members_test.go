package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEqualFoldASCII: member names match as encoding/json matches them to fields.
func TestEqualFoldASCII(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, name string
		want      bool
	}{
		{"name", "name", true}, {"NAME", "name", true}, {"Name", "name", true},
		{"_META", "_meta", true}, {"_meta", "_meta", true}, {"`meta", "@meta", false},
		{"nam", "name", false}, {"namf", "name", false}, {"na-e", "na_e", false},
		{"\u212aey", "key", true}, // the Kelvin sign folds to k
		{"requeststate", "requestState", true}, {"ünï", "uni", false},
	} {
		assert.Equal(t, tc.want, equalFoldASCII([]byte(tc.key), tc.name), "%q ~ %q", tc.key, tc.name)
		assert.Equal(t, strings.EqualFold(tc.key, tc.name), equalFoldASCII([]byte(tc.key), tc.name), "%q ~ %q like strings.EqualFold", tc.key, tc.name)
	}
}

// FuzzModernScansMatchEncodingJSON: the scans of a modern request's params and _meta, and of
// any request's _meta, read what encoding/json reads, or leave the text to it.
func FuzzModernScansMatchEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","arguments":{"a":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":5}}`,
		`{"uri":"res://x","requestState":"s","_meta":null}`, `{"NAME":"x"}`, `{"name":null,"name":"y"}`, `{"name":5}`,
		`{"inputResponses":{"a":{}}}`, `{"_meta":{"io.modelcontextprotocol/logLevel":"info","io.modelcontextprotocol/logLevel":"debug"}}`,
		`{"\u006eame":"x"}`, `{"name":"a\u00e9\n"}`, `[]`, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		params := []byte(s)
		if !json.Valid(params) {
			return // the runtime scans messages decodeMessage has validated
		}
		var got, want modernParams
		gotErr := got.decode(params)
		wantErr := json.Unmarshal(params, &want)
		require.Equal(t, wantErr == nil, gotErr == nil, "%s: decode error %v, encoding/json's %v", s, gotErr, wantErr)
		if wantErr == nil {
			assert.Equal(t, normalize(want.Meta), normalize(got.Meta), "%s: _meta", s)
			assert.Equal(t, want.Name, got.Name, "%s: name", s)
			assert.Equal(t, want.URI, got.URI, "%s: uri", s)
			assert.Equal(t, want.RequestState, got.RequestState, "%s: requestState", s)
			assert.Equal(t, normalize(want.Arguments), normalize(got.Arguments), "%s: arguments", s)
			assert.Equal(t, len(want.InputResponses), len(got.InputResponses), "%s: inputResponses", s)
		}
		if m := trimSpace(want.Meta); wantErr == nil && len(m) > 0 && m[0] == '{' {
			var mm modernMeta
			require.True(t, mm.decode(m), "%s: _meta", s)
			var all map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(m, &all))
			for k, v := range map[string]json.RawMessage{metaProtocolVersion: mm.version, metaClientCaps: mm.caps, metaClientInfo: mm.info, metaLogLevel: mm.logLevel} {
				assert.Equal(t, normalize(all[k]), normalize(v), "%s: _meta[%q]", s, k)
			}
		}
		rm, rerr := requestMeta(params)
		var p struct {
			Meta *RequestMeta `json:"_meta"`
		}
		if rerr == nil && rm != nil && json.Unmarshal(params, &p) == nil && p.Meta != nil {
			assert.Equal(t, normalize(p.Meta.ProgressToken), normalize(rm.ProgressToken), "%s: progressToken", s)
			assert.Equal(t, len(p.Meta.Other), len(rm.Other), "%s: other _meta keys", s)
			for k, v := range p.Meta.Other {
				assert.Equal(t, normalize(v), normalize(rm.Other[k]), "%s: _meta[%q]", s, k)
			}
		}
		var pv struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(params, &pv) == nil {
			_, slow := pv.Meta[metaProtocolVersion]
			assert.Equal(t, slow, hasMetaVersion(params), "%s: hasMetaVersion", s)
		}
	})
}

// normalize returns JSON text as one canonical string ("" for none), to compare views with
// copies.
func normalize(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return "invalid:" + string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestRequestMetaValuesDoNotAliasParams: the values of RequestMeta (Other, ProgressToken) are
// views of the request's params, which the handler still reads (its arguments); appending to
// one, as to any []byte a handler is given, must not write over the params after it, as it
// cannot with encoding/json's copies.
func TestRequestMetaValuesDoNotAliasParams(t *testing.T) {
	t.Parallel()
	params := []byte(`{"_meta":{"progressToken":"p","trace":"t"},"arguments":{"text":"hello"}}`)
	orig := string(params)
	m, rpcErr := requestMeta(params)
	require.Falsef(t, rpcErr != nil || m == nil, "requestMeta: %v", rpcErr)
	_ = append(m.Other["trace"], `,"arguments":{"text":"overwritten"}}`...)
	_ = append(m.ProgressToken, `XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX`...)
	assert.Falsef(t, string(params) != orig, "params changed by appending to their _meta's values:\n got %s\nwant %s", params, orig)
}
