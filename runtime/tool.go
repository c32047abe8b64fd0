package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
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
	// listing is who sees the tool and its cache hint (cache_hint.go).
	listing listing
	// taskSupport says whether the tool runs as a task (ToolSpec.TaskSupport).
	taskSupport TaskSupport
	// deferTask: its handler decides when a call becomes a task (DeferTask, task_server.go).
	deferTask bool
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

// addTool registers a tool, served by e's call inside opts' interceptors, and tells the
// clients the list changed.
func (s *Server) addTool(spec ToolSpec, e *toolEntry, opts []HandlerOption) {
	t := describeTool(&spec)
	if e.decode == nil {
		e.schema = compileInputSchema(spec.Name, t.InputSchema)
	}
	enc, err := json.Marshal(&t)
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %q: %v", spec.Name, err))
	}
	e.tool, e.encoded, e.scopes, e.taskSupport = t, enc, spec.Scopes, spec.TaskSupport
	if len(spec.Scopes) > 0 {
		s.scoped.Store(true)
	}
	hc := newHandlerConfig(opts)
	e.call, e.deferTask = s.limits.wrapTool(&spec, chain(hc.interceptors, e.call)), hc.deferTask
	e.listing = newListing(&hc)
	if spec.Cache != nil {
		h := *spec.Cache
		e.listing.cache = &h
	}
	if !s.tools.add(spec.Name, e) {
		panic(fmt.Sprintf("mcp: a tool named %q is already registered", spec.Name))
	}
	if e.taskSupport != TaskForbidden {
		s.tasks.tools.Add(1)
	}
	s.broadcast(notifToolsListChanged, nil)
}

// describeTool returns the Tool that tools/list lists for spec, with its schemas compacted
// (an object of any shape for input when spec has none), and panics on a registration's
// mistake: a name tools cannot have, a schema that is not a JSON object.
func describeTool(spec *ToolSpec) Tool {
	if !toolNameRE.MatchString(spec.Name) {
		panic(fmt.Sprintf("mcp: invalid tool name %q: must match %s", spec.Name, toolNameRE))
	}
	t := Tool{Name: spec.Name, Title: spec.Title, Description: spec.Description, Annotations: spec.Annotations, Meta: spec.Meta}
	if spec.TaskSupport != TaskForbidden {
		t.Execution = &ToolExecution{TaskSupport: spec.TaskSupport.String()}
	}
	t.InputSchema = mustSchema(spec.Name, "input", spec.InputSchema, `{"type":"object"}`)
	if spec.OutputSchema != "" {
		t.OutputSchema = mustSchema(spec.Name, "output", spec.OutputSchema, "")
	}
	return t
}

// RemoveTool removes a tool; it reports whether there was one.
func (s *Server) RemoveTool(name string) bool {
	t, _ := s.tools.get(name)
	ok := s.tools.remove(name)
	if ok && t != nil && t.taskSupport != TaskForbidden {
		s.tasks.tools.Add(-1)
	}
	if ok {
		s.broadcast(notifToolsListChanged, nil)
	}
	return ok
}

// mustSchema returns a tool's input or output schema (which) compacted, def when it has none,
// and panics when it is not a JSON object: a registration's mistake.
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

// ErrorResult returns a tool result that reports a tool execution error with text msg.
func ErrorResult(msg string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(msg)}, IsError: true}
}

func (s *Server) handleListTools(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	token := rs.tokenInfo()
	byScope := s.cfg.listsByScope
	items, next, err := s.tools.pageOf(params, s.cfg.pageSize, func(t *toolEntry) bool {
		return t.listing.shows(ctx, token) && (!byScope || len(token.missingScopes(t.scopes)) == 0)
	})
	if err != nil {
		return nil, err
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
	hint := func(t *toolEntry) listHint {
		h := t.listing.hint()
		h.personal = h.personal || (byScope && len(t.scopes) > 0)
		return h
	}
	page := make([]listHint, len(items))
	for i, t := range items {
		page[i] = hint(t)
	}
	return json.RawMessage(withListHint(rs, buf, s.listHintOf(page, s.tools.hints(hint)))), nil
}

// routeCallTool resolves a tools/call request before the interceptors run: it finds the
// tool and decodes a typed tool's arguments, so that interceptors see Request.Name and
// Request.Message. A request that cannot be served still passes through the interceptors,
// with a CallFunc that returns the reason.
func (s *Server) routeCallTool(req *Request) {
	var p CallToolParams
	if mr := req.rs.modern; mr != nil {
		p = CallToolParams{Name: mr.name(), Arguments: mr.args} // checkModern read them
	} else {
		var err error
		if p, err = callToolParams(req.Params); err != nil {
			req.serve = failWith(err)
			return
		}
	}
	req.Name = p.Name
	t, ok := s.tools.get(p.Name)
	if ok && s.hiddenFrom(req.rs, &t.listing) {
		ok = false // hidden from this caller: as if it did not exist (WithVisibility)
	}
	if !ok {
		req.serve = failWith(Errorf(CodeInvalidParams, "unknown tool %q; call tools/list for the available tools", truncate(p.Name, 100)))
		return
	}
	// A view of the request's body, capped at its own length: a handler that appends to its
	// CallToolRequest.Arguments gets a copy, rather than overwriting the bytes that follow.
	p.Arguments = p.Arguments[:len(p.Arguments):len(p.Arguments)]
	req.tool, req.args = t, p.Arguments
	if err := t.checkArguments(p.Arguments); err != nil {
		req.serve = failWith(err)
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
	if err := s.routeTask(req, t); err != nil {
		req.serve = failWith(err)
	}
}

// callToolParams reads a tools/call's name and arguments (without _meta, which runHandler
// decoded already): by a scan in the common case, else by encoding/json, whose errors say
// what is wrong. A call without a name is refused.
func callToolParams(params json.RawMessage) (CallToolParams, error) {
	p, ok := scanCallToolParams(params)
	if !ok {
		var q struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
		}
		if err := unmarshalParams(params, &q); err != nil {
			return CallToolParams{}, err
		}
		p = CallToolParams{Name: q.Name, Arguments: q.Arguments}
	}
	if p.Name == "" {
		return CallToolParams{}, NewError(CodeInvalidParams, `tools/call needs "name": the tool to call`)
	}
	return p, nil
}

// checkArguments decides whether args can be the tool's arguments: a JSON object (or null,
// or none) that its input schema accepts.
func (t *toolEntry) checkArguments(args json.RawMessage) error {
	if a := trimSpace(args); len(a) > 0 && a[0] != '{' && string(a) != "null" {
		return fmt.Errorf("invalid arguments for tool %s: arguments must be a JSON object", t.tool.Name)
	}
	if msg := checkInputSchema(t.schema, args); msg != "" {
		return fmt.Errorf("invalid arguments for tool %s: %s", t.tool.Name, msg)
	}
	return nil
}

// failWith returns a CallFunc that fails with err.
func failWith(err error) CallFunc {
	return func(context.Context, *Request) (*Response, error) { return nil, err }
}

// toolAnswer turns what the interceptors and the tool returned into the tools/call result: a
// JSON-RPC error for an *Error or a cancelled request, a result with isError set for any other
// error (as documented on ToolHandler), and a typed tool's message encoded without copies.
func toolAnswer(ctx context.Context, req *Request, resp *Response, err error) (any, error) {
	resp, err = continueInline(ctx, req, resp, err) // a ContinueAsTask where no task can be (task_server.go)
	if err != nil {
		return toolFailure(ctx, err)
	}
	var res *CallToolResult
	switch {
	case resp == nil:
	case resp.Result != nil:
		if tc, ok := resp.Result.(*taskCreated); ok {
			return tc, nil // a task was created: its CreateTaskResult (task_server.go)
		}
		tr, ok := resp.Result.(*CallToolResult)
		if !ok {
			return nil, Errorf(CodeInternalError, "tools/call answered with a %T result; want a *runtime.CallToolResult", resp.Result)
		}
		res = tr
	case resp.Message != nil:
		return messageAnswer(req, resp.Message)
	}
	return resultAnswer(req, res)
}

// toolFailure answers a tool call that failed: a protocol error (*Error), or a cancelled or
// timed-out request, stays an error, for runHandler to decide; any other is the tool's
// execution error, a result with isError set (spec 2025-11-25, Tools, Error Handling).
func toolFailure(ctx context.Context, err error) (any, error) {
	var rpc *Error
	if errors.As(err, &rpc) || ctx.Err() != nil {
		return nil, err
	}
	return encodeToolResult(ErrorResult(err.Error()))
}

// messageAnswer encodes a typed tool's message as its result: the message's JSON straight
// into a result buffer held in the request's state, with no CallToolResult around it, unless
// the message is a ToolResult, which says what the CallToolResult holds.
func messageAnswer(req *Request, m proto.Message) (any, error) {
	enc := (*resultEncoding)(nil)
	if req.tool != nil {
		enc = req.tool.enc
	}
	if enc == nil {
		enc = new(resultEncoding)
	}
	if _, ok := m.(*mcpv1.ToolResult); ok {
		res, err := messageResult(m, enc)
		if err != nil {
			return nil, err
		}
		return resultAnswer(req, res)
	}
	er := req.encoded()
	if _, err := encodeMessageResult(er, m, enc); err != nil {
		return nil, err
	}
	return er, nil
}

// resultAnswer encodes a CallToolResult (an empty one for nil): one encoded already, by
// CallToolResult's own constructors, goes out as it is.
func resultAnswer(req *Request, res *CallToolResult) (any, error) {
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

// unmarshalParams decodes params, reporting failures as invalid params.
func unmarshalParams(params json.RawMessage, v any) *Error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return paramsError(err)
	}
	return nil
}

// paramsError turns a decoding error into the invalid-params error that answers it, naming
// the field of the wrong type when encoding/json says which.
func paramsError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return Errorf(CodeInvalidParams, "invalid params: field %q must be %s, got %s", te.Field, te.Type.String(), te.Value)
	}
	return Errorf(CodeInvalidParams, "invalid params: %v", err)
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
