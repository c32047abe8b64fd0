package runtime

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/protomcp/protomcp/internal/protojsonfast"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file encodes tool results onto the wire: a typed tool's answer is written once, into
// pooled buffers, as the whole JSON-RPC response, after the interceptors have seen it.

// resultEncoding is what a typed tool keeps between calls to encode its results: the size of
// its last one, and the buffers of results that went out as JSON answers, to be reused.
type resultEncoding struct {
	sizeHint atomic.Int64
	pool     sync.Pool // *wireBuf
	// kind is the result type last encoded and whether protojsonfast writes it: a tool's
	// results are all of one type, unless an interceptor replaces them.
	kind atomic.Pointer[resultKind]
}

// resultKind is a message type and protojsonfast.Supported's answer for it.
type resultKind struct {
	md   protoreflect.MessageDescriptor
	fast bool
}

// fast reports protojsonfast.Supported(md), remembering the answer for the tool's next result.
func (e *resultEncoding) fast(md protoreflect.MessageDescriptor) bool {
	if k := e.kind.Load(); k != nil && k.md == md {
		return k.fast
	}
	k := &resultKind{md: md, fast: protojsonfast.Supported(md)}
	e.kind.Store(k)
	return k.fast
}

// wireBuf is a result buffer that goes back to its tool's pool once written.
type wireBuf struct {
	b    []byte
	pool *sync.Pool
}

// maxPooledResult bounds the buffers kept for reuse.
const maxPooledResult = 1 << 20

func (e *resultEncoding) get() *wireBuf {
	need := max(int(e.sizeHint.Load()), resultHeadroom+256)
	if wb, _ := e.pool.Get().(*wireBuf); wb != nil && cap(wb.b) >= need {
		return wb
	}
	return &wireBuf{b: make([]byte, 0, need), pool: &e.pool}
}

// release returns the buffer to its pool. Only the writer of an answer calls it, after writing
// it, and only when nothing else keeps the answer: an SSE answer's event goes to the event
// store as a copy (stream.take) when the buffer is reusable. One that did not go out at all is
// left to the garbage collector.
func (wb *wireBuf) release() {
	if wb.reusable() {
		wb.pool.Put(wb)
	}
}

// reusable reports whether release would keep the buffer for another call.
func (wb *wireBuf) reusable() bool {
	return wb != nil && cap(wb.b) <= maxPooledResult
}

// resultHeadroom is the room left in front of an encoded typed result for the JSON-RPC
// envelope (`{"jsonrpc":"2.0","id":ID,"result":`), so that the response is written around the
// result instead of copied: 32 bytes and the ID's, a UUID's fits, with the 2026-07-28 era's
// resultType member besides (responseWith).
const resultHeadroom = 112

// encodedResult is a typed tool's result encoded at off in buf, with room for the envelope
// before it and, usually, for its closing brace after it; pooled is buf's pool handle.
type encodedResult struct {
	buf    []byte
	off    int
	pooled *wireBuf
}

// response returns the JSON-RPC response to id carrying the result, written into the
// result's own buffer when the envelope fits in front of it (else, as encodeResponse, copied),
// and the buffer's pool handle when the response is in it.
func (r *encodedResult) response(id *ID) ([]byte, *wireBuf) {
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	idText := "null"
	if id != nil && !id.IsZero() {
		idText = id.raw
	}
	n := len(head) + len(idText) + len(mid)
	if n > r.off {
		return encodeResponse(id, r.buf[r.off:], nil), nil
	}
	at := r.off - n
	p := r.buf[at:r.off]
	p = p[copy(p, head):]
	p = p[copy(p, idText):]
	copy(p, mid)
	body := append(r.buf[at:], '}')
	if &body[0] != &r.buf[at] {
		return body, nil // the brace did not fit: a new buffer
	}
	return body, r.pooled
}

// responseWith is response with member (one or more JSON members) as the first of the result
// object, written in front of the result as the envelope is: the 2026-07-28 era's resultType
// (spec 2026-07-28, schema, Result) costs no copy of the answer. ok is false when the
// envelope and member do not fit in front of the result, or the result is not an object or
// starts with a resultType of its own: the caller then inserts the member into a copy.
func (r *encodedResult) responseWith(id *ID, member string) (body []byte, pooled *wireBuf, ok bool) {
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":{`
	res := r.buf[r.off:]
	if len(res) < 2 || res[0] != '{' || bytes.HasPrefix(res[1:], []byte(`"resultType"`)) {
		return nil, nil, false
	}
	idText := "null"
	if id != nil && !id.IsZero() {
		idText = id.raw
	}
	comma := 1
	if res[1] == '}' {
		comma = 0
	}
	// The prefix ends where the result's opening brace was: it writes that brace again.
	n := len(head) + len(idText) + len(mid) + len(member) + comma
	if n > r.off+1 {
		return nil, nil, false
	}
	at := r.off + 1 - n
	p := r.buf[at : r.off+1]
	p = p[copy(p, head):]
	p = p[copy(p, idText):]
	p = p[copy(p, mid):]
	p = p[copy(p, member):]
	if comma == 1 {
		p[0] = ','
	}
	body = append(r.buf[at:], '}')
	if &body[0] != &r.buf[at] {
		return body, nil, true // the brace did not fit: a new buffer
	}
	return body, r.pooled, true
}

// encoded returns the encodedResult a typed tool's answer is written into: the one kept in
// the request's state when there is one, so that it costs no allocation.
func (req *Request) encoded() *encodedResult {
	if req.rs != nil {
		return &req.rs.enc
	}
	return new(encodedResult)
}

// encodeToolResult encodes a CallToolResult, fast for the common typed-tool shape.
func encodeToolResult(r *CallToolResult) (json.RawMessage, error) {
	if r.wire != nil {
		return r.wire[r.wireOff:], nil // a typed tool's result, encoded by messageResult
	}
	if r.Content == nil {
		r.Content = []Content{}
	}
	return json.Marshal(r)
}
