package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/internal/fieldrules"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// CallToolRequest is what a raw ToolHandler receives.
type CallToolRequest struct {
	// Name is the tool's name.
	Name string
	// Arguments is the arguments object as JSON (nil when the client sent none).
	Arguments json.RawMessage
	// Meta is the request's _meta, if any.
	Meta *RequestMeta
}

// ToolHandler handles tools/call for one tool, working on raw JSON. A returned *Error (or an
// error wrapping one) becomes a JSON-RPC error; any other error becomes a result with isError
// set and the error's text, so that the model can read it.
type ToolHandler func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

type toolEntry struct {
	tool    Tool
	encoded json.RawMessage // the Tool as tools/list sends it
	// decode turns a typed tool's arguments into its request message; nil for a raw tool.
	decode func(args json.RawMessage) (proto.Message, error)
	// schema is a raw tool's compiled input schema, checked before the call (inputschema.go);
	// nil for a typed tool, or a schema that asks only for an object.
	schema *jsonschema.Schema
	// call serves the tool: its handler inside the registration's interceptors.
	call CallFunc
	// enc is what a typed tool keeps between calls to encode its results.
	enc *resultEncoding
	// scopes are the OAuth scopes a caller's token needs (ToolSpec.Scopes).
	scopes []string
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// AddTool adds a tool with a raw handler. Arguments that do not conform to spec.InputSchema
// (JSON Schema 2020-12 unless it says otherwise, self-contained) are answered with a tool
// error naming the failing path and reason, before interceptors and the handler run. AddTool
// panics if the spec is invalid (a bad name, or an input schema that is not a JSON object or
// does not compile) or the server already has a tool of that name: both are programming
// errors, like registering a pattern twice on an http.ServeMux. To replace a tool at run
// time, RemoveTool it first. Interceptors given in opts wrap this tool's calls, inside the
// server's.
func (s *Server) AddTool(spec ToolSpec, h ToolHandler, opts ...HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for tool %q", spec.Name))
	}
	s.addTool(spec, &toolEntry{call: func(ctx context.Context, req *Request) (*Response, error) {
		res, err := h(ctx, &CallToolRequest{Name: req.Name, Arguments: req.args, Meta: req.Meta})
		if err != nil {
			return nil, err
		}
		resp := req.response()
		resp.Result = res
		return resp, nil
	}}, opts)
}

func (s *Server) addTool(spec ToolSpec, e *toolEntry, opts []HandlerOption) {
	if !toolNameRE.MatchString(spec.Name) {
		panic(fmt.Sprintf("mcp: invalid tool name %q: must match %s", spec.Name, toolNameRE))
	}
	t := Tool{Name: spec.Name, Title: spec.Title, Description: spec.Description, Annotations: spec.Annotations}
	t.InputSchema = mustSchema(spec.Name, "input", spec.InputSchema, `{"type":"object"}`)
	if e.decode == nil {
		e.schema = compileInputSchema(spec.Name, t.InputSchema)
	}
	if spec.OutputSchema != "" {
		t.OutputSchema = mustSchema(spec.Name, "output", spec.OutputSchema, "")
	}
	enc, err := json.Marshal(&t)
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %q: %v", spec.Name, err))
	}
	e.tool, e.encoded, e.scopes = t, enc, spec.Scopes
	e.call = chain(newHandlerConfig(opts).interceptors, e.call)
	if !s.tools.add(spec.Name, e) {
		panic(fmt.Sprintf("mcp: a tool named %q is already registered", spec.Name))
	}
	s.broadcast(notifToolsListChanged, nil)
}

// RemoveTool removes a tool; it reports whether there was one.
func (s *Server) RemoveTool(name string) bool {
	ok := s.tools.remove(name)
	if ok {
		s.broadcast(notifToolsListChanged, nil)
	}
	return ok
}

func mustSchema(tool, which, schema, def string) json.RawMessage {
	if strings.TrimSpace(schema) == "" {
		schema = def
	}
	var probe map[string]any
	if err := json.Unmarshal([]byte(schema), &probe); err != nil {
		panic(fmt.Sprintf("mcp: tool %q: %s schema is not a JSON object: %v", tool, which, err))
	}
	var buf strings.Builder
	if err := compactJSON(&buf, schema); err != nil {
		panic(fmt.Sprintf("mcp: tool %q: %s schema: %v", tool, which, err))
	}
	return json.RawMessage(buf.String())
}

// AddTool adds a typed tool: arguments are decoded with protojson into a new Req (unknown
// fields and wrong types are reported to the model as a tool error naming the field), and the
// response is sent as structuredContent plus a text mirror of the same JSON. A response of type
// *mcpv1.ToolResult is sent as its content blocks instead. Interceptors see the decoded Req as
// Request.Message and the handler's response as Response.Message. Generated Register functions
// call this once per tool.
func AddTool[Req any, Res proto.Message, PReq interface {
	*Req
	proto.Message
}](s *Server, spec ToolSpec, h func(context.Context, PReq) (Res, error), opts ...HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for tool %q", spec.Name))
	}
	name := spec.Name
	e := &toolEntry{enc: new(resultEncoding), decode: typedDecoder[Req, PReq](spec)}
	e.call = func(ctx context.Context, req *Request) (*Response, error) {
		in, ok := req.Message.(PReq)
		if !ok {
			return nil, Errorf(CodeInternalError, "tool %s: the request is a %T where the tool takes a %T (an interceptor replaced it)", name, req.Message, in)
		}
		out, err := h(ctx, in)
		if err != nil {
			return nil, err
		}
		resp := req.response()
		resp.Message = out
		return resp, nil
	}
	s.addTool(spec, e, opts)
}

// typedDecoder returns the decode function of a typed tool (see AddTool): protojson into a
// new Req, the strict and required-field checks, then spec.Validate.
func typedDecoder[Req any, PReq interface {
	*Req
	proto.Message
}](spec ToolSpec) func(args json.RawMessage) (proto.Message, error) {
	name := spec.Name
	md := PReq(new(Req)).ProtoReflect().Descriptor()
	required := requiredFields(spec.InputSchema, md)
	return func(args json.RawMessage) (proto.Message, error) {
		in := PReq(new(Req))
		if len(args) > 0 && string(args) != "null" {
			if err := argsUnmarshal.Unmarshal(args, in); err != nil {
				if path := errorPath(in.ProtoReflect(), args); path != "" {
					return nil, fmt.Errorf("invalid arguments for tool %s: %s: %s", name, path, cleanProtoError(err))
				}
				return nil, fmt.Errorf("invalid arguments for tool %s: %s", name, cleanProtoError(err))
			}
			if msg := checkArgs(args, md); msg != "" { // strict.go: what protojson takes but the schema does not
				return nil, fmt.Errorf("invalid arguments for tool %s: %s", name, msg)
			}
		}
		if missing := missingFields(args, required); len(missing) > 0 {
			return nil, fmt.Errorf("invalid arguments for tool %s: missing required field %s", name, strings.Join(missing, ", "))
		}
		if problems := checkRequired(in.ProtoReflect().Descriptor(), args); len(problems) > 0 {
			return nil, fmt.Errorf("invalid arguments for tool %s: %s", name, strings.Join(problems, "; "))
		}
		if err := validateArgs(spec.Validate, in); err != nil {
			return nil, fmt.Errorf("invalid arguments for tool %s: %w", name, err)
		}
		return in, nil
	}
}

// requiredField is a top-level field the input schema requires, under both names protojson
// accepts for it.
type requiredField struct {
	jsonName, protoName string
}

// requiredFields reads the input schema's top-level "required" list, for the fields that a
// hand-written schema requires beyond the required-field contract (see required.go).
func requiredFields(schema string, md protoreflect.MessageDescriptor) []requiredField {
	var s struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil {
		return nil
	}
	out := make([]requiredField, 0, len(s.Required))
	for _, n := range s.Required {
		f := requiredField{jsonName: n, protoName: n}
		if fd := md.Fields().ByJSONName(n); fd != nil {
			if fieldrules.Required(fd) {
				continue // checked with the nested fields, by checkRequired
			}
			f.protoName = string(fd.Name())
		}
		out = append(out, f)
	}
	return out
}

// missingFields lists the required fields absent (or null) in the arguments object.
func missingFields(args json.RawMessage, required []requiredField) []string {
	if len(required) == 0 {
		return nil
	}
	var present map[string]json.RawMessage
	if len(args) > 0 {
		_ = json.Unmarshal(args, &present)
	}
	var missing []string
	for _, f := range required {
		v, ok := present[f.jsonName]
		if !ok {
			v, ok = present[f.protoName]
		}
		if !ok || string(v) == "null" {
			missing = append(missing, strconv.Quote(f.jsonName))
		}
	}
	return missing
}

var (
	argsUnmarshal   = protojson.UnmarshalOptions{}
	resultMarshal   = protojson.MarshalOptions{}
	resultUnmarshal = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// cleanProtoError strips protojson's "proto: (line 1:2): " prefix, keeping what names the field.
func cleanProtoError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "proto:")
	msg = strings.TrimSpace(msg)
	if strings.HasPrefix(msg, "(line ") {
		if i := strings.Index(msg, "): "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	return strings.ReplaceAll(msg, "\u00a0", " ")
}

// ErrorResult returns a tool result that reports a tool execution error with text msg.
func ErrorResult(msg string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(msg)}, IsError: true}
}

// messageResult turns a handler's response message into a CallToolResult that is already
// encoded: protojson writes structuredContent straight into the result's buffer and the text
// mirror is escaped from those bytes, so that a typed result costs one buffer (sized from the
// tool's previous result) instead of protojson's buffer, a string copy and a reflective
// encoding/json pass that re-validates the structured JSON and escapes the text again.
func messageResult(out proto.Message, enc *resultEncoding) (*CallToolResult, error) {
	if tr, ok := out.(*mcpv1.ToolResult); ok {
		return fromProtoToolResult(tr)
	}
	var er encodedResult
	end, err := encodeMessageResult(&er, out, enc)
	if err != nil {
		return nil, err
	}
	start := er.off + len(`{"structuredContent":`)
	return &CallToolResult{StructuredContent: er.buf[start:end:end], wire: er.buf, wireOff: er.off, wireBuf: er.pooled}, nil
}

// encodeMessageResult writes the tools/call result of a typed tool's message (not a
// *mcpv1.ToolResult) into er, as messageResult does, without a CallToolResult around it. end
// is where structuredContent ends in er.buf.
func encodeMessageResult(er *encodedResult, out proto.Message, enc *resultEncoding) (end int, err error) {
	if out == nil || !out.ProtoReflect().IsValid() {
		out = out.ProtoReflect().Type().New().Interface()
	}
	buf := enc.get()
	wire := buf.b[:resultHeadroom]
	wire = append(wire, `{"structuredContent":`...)
	start := len(wire)
	wire, err = appendResultJSON(wire, out)
	if err != nil {
		return 0, Errorf(CodeInternalError, "could not encode tool result: %v", err)
	}
	end = len(wire)
	wire = append(wire, `,"content":[{"type":"text","text":`...)
	wire = appendJSONString(wire, wire[start:end])
	wire = append(wire, "}]}"...)
	enc.sizeHint.Store(int64(len(wire) + 1)) // + the envelope's closing brace
	buf.b = wire
	*er = encodedResult{buf: wire, off: resultHeadroom, pooled: buf}
	return end, nil
}

// resultEncoding is what a typed tool keeps between calls to encode its results: the size of
// its last one, and the buffers of results that went out as JSON answers, to be reused.
type resultEncoding struct {
	sizeHint atomic.Int64
	pool     sync.Pool // *wireBuf
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

// release returns the buffer to its pool. Only the writer of a JSON answer calls it, after
// writing: an answer that went out as SSE may be kept by the event store, and one that did not
// go out at all is left to the garbage collector.
func (wb *wireBuf) release() {
	if wb != nil && cap(wb.b) <= maxPooledResult {
		wb.pool.Put(wb)
	}
}

// resultHeadroom is the room left in front of an encoded typed result for the JSON-RPC
// envelope (`{"jsonrpc":"2.0","id":ID,"result":`), so that the response is written around the
// result instead of copied: 32 bytes and the ID's, a UUID's fits.
const resultHeadroom = 80

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

// appendJSONString appends s, UTF-8 text, as a JSON string, escaping what JSON requires:
// quotes, backslashes and control characters.
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	from := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[from:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		from = i + 1
	}
	dst = append(dst, s[from:]...)
	return append(dst, '"')
}

func (s *Server) handleListTools(_ context.Context, _ *requestState, params json.RawMessage) (any, error) {
	cursor, err := cursorOf(params)
	if err != nil {
		return nil, err
	}
	items, next, rpcErr := s.tools.page(cursor, s.cfg.pageSize)
	if rpcErr != nil {
		return nil, rpcErr
	}
	buf := make([]byte, 0, 256*len(items)+32)
	buf = append(buf, `{"tools":[`...)
	for i, t := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, t.encoded...)
	}
	buf = append(buf, ']')
	if next != "" {
		buf = append(buf, `,"nextCursor":`...)
		nb, _ := json.Marshal(next)
		buf = append(buf, nb...)
	}
	buf = append(buf, '}')
	return json.RawMessage(buf), nil
}

// routeCallTool resolves a tools/call request before the interceptors run: it finds the
// tool and decodes a typed tool's arguments, so that interceptors see Request.Name and
// Request.Message. A request that cannot be served still passes through the interceptors,
// with a CallFunc that returns the reason.
func (s *Server) routeCallTool(req *Request) {
	p, ok := scanCallToolParams(req.Params)
	if !ok {
		// Without _meta, which runHandler decoded already.
		var q struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
		}
		if err := unmarshalParams(req.Params, &q); err != nil {
			req.serve = failWith(err)
			return
		}
		p = CallToolParams{Name: q.Name, Arguments: q.Arguments}
	}
	if p.Name == "" {
		req.serve = failWith(NewError(CodeInvalidParams, `tools/call needs "name": the tool to call`))
		return
	}
	req.Name = p.Name
	t, ok := s.tools.get(p.Name)
	if !ok {
		req.serve = failWith(Errorf(CodeInvalidParams, "unknown tool %q; call tools/list for the available tools", truncate(p.Name, 100)))
		return
	}
	req.tool, req.args = t, p.Arguments
	if len(p.Arguments) > 0 {
		if a := trimSpace(p.Arguments); len(a) > 0 && a[0] != '{' && string(a) != "null" {
			req.serve = failWith(fmt.Errorf("invalid arguments for tool %s: arguments must be a JSON object", p.Name))
			return
		}
	}
	if msg := checkInputSchema(t.schema, p.Arguments); msg != "" {
		req.serve = failWith(fmt.Errorf("invalid arguments for tool %s: %s", p.Name, msg))
		return
	}
	if t.decode != nil {
		msg, err := t.decode(p.Arguments)
		if err != nil {
			req.serve = failWith(err)
			return
		}
		req.Message = msg
	}
	req.serve = t.call
}

// failWith returns a CallFunc that fails with err.
func failWith(err error) CallFunc {
	return func(context.Context, *Request) (*Response, error) { return nil, err }
}

// encoded returns the encodedResult a typed tool's answer is written into: the one kept in
// the request's state when there is one, so that it costs no allocation.
func (req *Request) encoded() *encodedResult {
	if req.rs != nil {
		return &req.rs.enc
	}
	return new(encodedResult)
}

// toolAnswer turns what the interceptors and the tool returned into the tools/call result: a
// JSON-RPC error for an *Error or a cancelled request, a result with isError set for any other
// error (as documented on ToolHandler), and a typed tool's message encoded without copies.
func toolAnswer(ctx context.Context, req *Request, resp *Response, err error) (any, error) {
	if err != nil {
		var rpc *Error
		if errors.As(err, &rpc) || ctx.Err() != nil {
			// A protocol error, or a cancelled or timed-out request: runHandler decides.
			return nil, err
		}
		return encodeToolResult(ErrorResult(err.Error()))
	}
	var res *CallToolResult
	switch {
	case resp == nil:
	case resp.Result != nil:
		tr, ok := resp.Result.(*CallToolResult)
		if !ok {
			return nil, Errorf(CodeInternalError, "tools/call answered with a %T result; want a *runtime.CallToolResult", resp.Result)
		}
		res = tr
	case resp.Message != nil:
		enc := (*resultEncoding)(nil)
		if req.tool != nil {
			enc = req.tool.enc
		}
		if enc == nil {
			enc = new(resultEncoding)
		}
		if _, ok := resp.Message.(*mcpv1.ToolResult); !ok {
			// The common case: the message's JSON straight into a result buffer, with no
			// CallToolResult around it, held in the request's state.
			er := req.encoded()
			if _, err := encodeMessageResult(er, resp.Message, enc); err != nil {
				return nil, err
			}
			return er, nil
		}
		r, err := messageResult(resp.Message, enc)
		if err != nil {
			return nil, err
		}
		res = r
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.wire != nil {
		er := req.encoded()
		*er = encodedResult{buf: res.wire, off: res.wireOff, pooled: res.wireBuf}
		return er, nil
	}
	return encodeToolResult(res)
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

// cursorOf reads params.cursor.
func cursorOf(params json.RawMessage) (string, error) {
	if len(params) == 0 {
		return "", nil
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return "", err
	}
	return p.Cursor, nil
}

// unmarshalParams decodes params, reporting failures as invalid params.
func unmarshalParams(params json.RawMessage, v any) *Error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Errorf(CodeInvalidParams, "invalid params: field %q must be %s, got %s", te.Field, te.Type.String(), te.Value)
		}
		return Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func compactJSON(b *strings.Builder, s string) error {
	var v json.RawMessage
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return err
	}
	var out []byte
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}
