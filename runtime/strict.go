package runtime

import (
	"bytes"
	"encoding/json"
)

// envelopeMembers are the member names of a JSON-RPC message. JSON-RPC 2.0 names them in
// lower case, and JSON object keys are case-sensitive; encoding/json matches them without
// regard to case, so that `"ID"` or `"METHOD"` would be taken for the real members.
var envelopeMembers = [...][]byte{[]byte("jsonrpc"), []byte("id"), []byte("method"), []byte("params"), []byte("result"), []byte("error")}

// checkMemberCase refuses a message whose top-level member names match a JSON-RPC member only
// without regard to case. data is valid JSON (encoding/json accepted it); the scan allocates
// nothing unless a key holds an escape.
func checkMemberCase(data []byte) *Error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		kEnd := stringEnd(data, i)
		if kEnd < 0 {
			return nil
		}
		key := data[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(data[i:kEnd], &k) != nil {
				return nil
			}
			key = []byte(k)
		}
		for _, m := range envelopeMembers {
			if len(key) == len(m) && !bytes.Equal(key, m) && bytes.EqualFold(key, m) {
				return Errorf(CodeInvalidRequest, "invalid request: member %q is not %q: JSON-RPC member names are case-sensitive", truncate(string(key), 20), m)
			}
		}
		i = skipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return nil
		}
		vEnd := valueEnd(data, skipSpace(data, i+1))
		if vEnd < 0 {
			return nil
		}
		i = skipSpace(data, vEnd)
		if i >= len(data) || data[i] != ',' {
			return nil
		}
		i = skipSpace(data, i+1)
	}
	return nil
}
