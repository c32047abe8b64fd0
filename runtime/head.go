package runtime

import "github.com/protomcp/protomcp/internal/jsonscan"

// The start of a message too long to read whole (a stdio line over the limit) still says what
// the message is; both sides of a message connection answer it from that (stdio.go,
// client_conn.go).

// msgKind is what kind of JSON-RPC message the start of one, cut off, shows it to be.
type msgKind int

const (
	headUnknown      msgKind = iota // cut before its kind shows
	headRequest                     // has a method and an id
	headNotification                // has a method and no id
	headResponse                    // has a result or an error, and no method
)

// headKind reads the top-level members of the start of a message, head, which may be cut
// anywhere, and reports its id (nil when head does not show one) and its kind. A member whose
// value is cut off still tells its key: "params" after "method" is a request's, "result" a
// response's. A kind is given only when head shows it unambiguously.
func headKind(head []byte) (*ID, msgKind) {
	var id *ID
	var method, result, cut bool
	i := jsonscan.FirstMember(head)
	for i >= 0 {
		if i >= len(head) || head[i] != '"' {
			cut = true
			break
		}
		kEnd := jsonscan.StringEnd(head, i)
		if kEnd < 0 {
			cut = true
			break
		}
		key := string(head[i+1 : kEnd-1])
		j := jsonscan.SkipSpace(head, kEnd)
		if j >= len(head) || head[j] != ':' {
			cut = true
			break
		}
		j = jsonscan.SkipSpace(head, j+1)
		vEnd := jsonscan.ValueEnd(head, j)
		switch key {
		case "method":
			method = true
		case "result", "error":
			result = true
		case "id":
			if vEnd >= 0 && vEnd < len(head) {
				var v ID
				if v.UnmarshalJSON(head[j:vEnd]) == nil && !v.IsZero() {
					id = &v
				}
			}
		}
		if vEnd < 0 || vEnd >= len(head) {
			cut = true
			break
		}
		j = jsonscan.SkipSpace(head, vEnd)
		if j >= len(head) || (head[j] != ',' && head[j] != '}') {
			cut = true
			break
		}
		if head[j] == '}' {
			break
		}
		i = jsonscan.SkipSpace(head, j+1)
	}
	switch {
	case method && !result && id != nil:
		return id, headRequest
	case method && !result && !cut:
		return nil, headNotification
	case result && !method:
		return id, headResponse
	}
	return id, headUnknown
}
