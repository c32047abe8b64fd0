package runtime

import (
	"bytes"
	"encoding/json"
	"testing"
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
		if err := json.Unmarshal(params, &want); err != nil {
			t.Fatalf("the scanner accepted %q, which encoding/json rejects: %v", params, err)
		}
		if got.Name != want.Name {
			t.Fatalf("name %q, encoding/json %q, in %q", got.Name, want.Name, params)
		}
		if !sameJSON(got.Arguments, want.Arguments) {
			t.Fatalf("arguments %q, encoding/json %q, in %q", got.Arguments, want.Arguments, params)
		}
		// _meta is left to requestMeta, which finds it with scanMember and decodes it once.
		if got.Meta != nil {
			t.Fatalf("the scanner decoded _meta a second time: %+v", got.Meta)
		}
		var wantMeta struct {
			Meta json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(params, &wantMeta)
		if raw, _, ok := scanMember(params, "_meta"); ok && !sameJSON(raw, wantMeta.Meta) {
			t.Fatalf("_meta %q, encoding/json %q, in %q", raw, wantMeta.Meta, params)
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
