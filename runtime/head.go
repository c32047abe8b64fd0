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
	var h headSeen
	for i := jsonscan.FirstMember(head); i >= 0; {
		key, val, next, ok := headMember(head, i)
		h.see(key, val)
		if !ok {
			h.cut = true
		}
		i = next
	}
	return h.id, h.kind()
}

// headSeen is what the members read so far of a cut message's start show.
type headSeen struct {
	id             *ID
	method, result bool
	cut            bool // head ended within a member
}

// see records a member: its key, and its value when the value was read whole (nil if cut).
func (h *headSeen) see(key string, val []byte) {
	switch key {
	case "method":
		h.method = true
	case "result", "error":
		h.result = true
	case "id":
		var v ID
		if val != nil && v.UnmarshalJSON(val) == nil && !v.IsZero() {
			h.id = &v
		}
	}
}

// kind is the message's kind, when the members seen show it unambiguously.
func (h *headSeen) kind() msgKind {
	switch {
	case h.method && !h.result && h.id != nil:
		return headRequest
	case h.method && !h.result && !h.cut:
		return headNotification
	case h.result && !h.method:
		return headResponse
	}
	return headUnknown
}

// headMember reads the member of head whose key starts at i: its key ("" when head ends
// before the key does), its value (nil when head ends within it) and where the next member's
// key starts (-1 after the last member, or a cut). ok is false when head is cut (or
// malformed) within or right after the member.
func headMember(head []byte, i int) (key string, val []byte, next int, ok bool) {
	if i >= len(head) || head[i] != '"' {
		return "", nil, -1, false
	}
	kEnd := jsonscan.StringEnd(head, i)
	if kEnd < 0 {
		return "", nil, -1, false
	}
	key = string(head[i+1 : kEnd-1])
	j := jsonscan.SkipSpace(head, kEnd)
	if j >= len(head) || head[j] != ':' {
		return key, nil, -1, false
	}
	j = jsonscan.SkipSpace(head, j+1)
	vEnd := jsonscan.ValueEnd(head, j)
	if vEnd < 0 || vEnd >= len(head) {
		return key, nil, -1, false
	}
	val = head[j:vEnd]
	j = jsonscan.SkipSpace(head, vEnd)
	switch {
	case j < len(head) && head[j] == '}':
		return key, val, -1, true // the object's last member
	case j >= len(head) || head[j] != ',':
		return key, val, -1, false
	}
	return key, val, jsonscan.SkipSpace(head, j+1), true
}
