package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

type structpbStruct = structpb.Struct

var jsonMarshal = json.Marshal

// ResourceHandler reads a resource. For a template, uri is the concrete URI requested.
type ResourceHandler func(ctx context.Context, uri string) (*ReadResourceResult, error)

// PromptHandler renders a prompt with its arguments.
type PromptHandler func(ctx context.Context, args map[string]string) (*GetPromptResult, error)

// CompletionHandler suggests values for a prompt argument or resource template variable.
type CompletionHandler func(ctx context.Context, p *CompleteParams) (*Completion, error)

type resourceEntry struct {
	resource Resource
	handler  ResourceHandler
	call     CallFunc // resources/read inside the registration's interceptors
}

type templateEntry struct {
	template ResourceTemplate
	handler  ResourceHandler
	match    func(uri string) bool
	call     CallFunc
	complete CompletionHandler // the template's own completions (typed templates), or nil
}

type promptEntry struct {
	prompt   Prompt
	handler  PromptHandler
	call     CallFunc          // prompts/get inside the registration's interceptors
	complete CompletionHandler // the prompt's own completions (typed prompts), or nil
}

// AddResource adds a resource with a fixed URI. Like AddTool, it panics if the server already
// has a resource with that URI: RemoveResource it first to replace it. Interceptors given in
// opts wrap the reads of this resource, inside the server's.
func (s *Server) AddResource(r Resource, h ResourceHandler, opts ...HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for resource %q", r.URI))
	}
	if r.URI == "" {
		panic("mcp: a resource needs a URI")
	}
	e := &resourceEntry{resource: r, handler: h, call: chain(newHandlerConfig(opts).interceptors, callMethod)}
	if !s.resources.add(r.URI, e) {
		panic(fmt.Sprintf("mcp: a resource with URI %q is already registered", r.URI))
	}
	s.broadcast(notifResourcesListChanged, nil)
}

// RemoveResource removes a resource; it reports whether there was one.
func (s *Server) RemoveResource(uri string) bool {
	ok := s.resources.remove(uri)
	if ok {
		s.broadcast(notifResourcesListChanged, nil)
	}
	return ok
}

// AddResourceTemplate adds a resource template (RFC 6570 level 1: {var} segments). Reads of
// URIs that match it and are not fixed resources go to h. It panics if the server already has
// a template with that URI template.
func (s *Server) AddResourceTemplate(t ResourceTemplate, h ResourceHandler, opts ...HandlerOption) {
	s.addResourceTemplate(t, h, nil, opts)
}

func (s *Server) addResourceTemplate(t ResourceTemplate, h ResourceHandler, complete CompletionHandler, opts []HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for resource template %q", t.URITemplate))
	}
	e := &templateEntry{template: t, handler: h, complete: complete, match: templateMatcher(t.URITemplate), call: chain(newHandlerConfig(opts).interceptors, callMethod)}
	if !s.templates.add(t.URITemplate, e) {
		panic(fmt.Sprintf("mcp: a resource template %q is already registered", t.URITemplate))
	}
	s.broadcast(notifResourcesListChanged, nil)
}

// RemoveResourceTemplate removes a resource template; it reports whether there was one.
func (s *Server) RemoveResourceTemplate(uriTemplate string) bool {
	ok := s.templates.remove(uriTemplate)
	if ok {
		s.broadcast(notifResourcesListChanged, nil)
	}
	return ok
}

// templateMatcher matches URIs against a level-1 URI template: literal text must match, and
// each {var} matches one or more characters other than '/'.
func templateMatcher(tmpl string) func(string) bool {
	var parts []string // literal, var, literal, var, ..., literal
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest, '}')
		if i < 0 || j < i {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, rest[:i])
		rest = rest[j+1:]
	}
	return func(uri string) bool {
		if !strings.HasPrefix(uri, parts[0]) {
			return false
		}
		uri = uri[len(parts[0]):]
		for _, lit := range parts[1:] {
			var k int
			if lit == "" {
				k = len(uri)
				if strings.IndexByte(uri, '/') >= 0 {
					return false
				}
			} else {
				k = strings.Index(uri, lit)
			}
			if k <= 0 || strings.IndexByte(uri[:k], '/') >= 0 {
				return false
			}
			uri = uri[k+len(lit):]
		}
		return uri == ""
	}
}

// NotifyResourceUpdated tells the sessions subscribed to uri, and the subscriptions/listen
// streams that asked for it, that it changed.
func (s *Server) NotifyResourceUpdated(uri string) {
	if s.cluster != nil {
		if !s.publish("", &busMessage{Kind: busResource, URI: uri}) {
			s.resourceUpdatedLocal(uri, true) // the bus is down: this replica's at least
		}
		return
	}
	s.resourceUpdatedLocal(uri, false)
}

// AddPrompt adds a prompt. Like AddTool, it panics if the server already has a prompt of that
// name: RemovePrompt it first to replace it. Interceptors given in opts wrap this prompt's
// prompts/get requests, inside the server's.
func (s *Server) AddPrompt(p Prompt, h PromptHandler, opts ...HandlerOption) {
	s.addPrompt(p, h, nil, opts)
}

func (s *Server) addPrompt(p Prompt, h PromptHandler, complete CompletionHandler, opts []HandlerOption) {
	if h == nil {
		panic(fmt.Sprintf("mcp: nil handler for prompt %q", p.Name))
	}
	if p.Name == "" {
		panic("mcp: a prompt needs a name")
	}
	e := &promptEntry{prompt: p, handler: h, complete: complete, call: chain(newHandlerConfig(opts).interceptors, callMethod)}
	if !s.prompts.add(p.Name, e) {
		panic(fmt.Sprintf("mcp: a prompt named %q is already registered", p.Name))
	}
	s.broadcast(notifPromptsListChanged, nil)
}

// routeGetPrompt names the prompt for interceptors and picks its registration's CallFunc.
func (s *Server) routeGetPrompt(req *Request) {
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return // handleGetPrompt reports the error
	}
	req.Name = p.Name
	if e, ok := s.prompts.get(p.Name); ok {
		req.serve = e.call
	}
}

// routeReadResource names the URI for interceptors and picks the CallFunc of the resource or
// template that will serve it.
func (s *Server) routeReadResource(req *Request) {
	routeURI(req)
	if req.Name == "" {
		return
	}
	if r, ok := s.resources.get(req.Name); ok {
		req.serve = r.call
		return
	}
	for _, t := range s.templates.all() {
		if t.match(req.Name) {
			req.serve = t.call
			return
		}
	}
}

// routeURI names the request's params.uri for interceptors.
func routeURI(req *Request) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(req.Params, &p) == nil {
		req.Name = p.URI
	}
}

// RemovePrompt removes a prompt; it reports whether there was one.
func (s *Server) RemovePrompt(name string) bool {
	ok := s.prompts.remove(name)
	if ok {
		s.broadcast(notifPromptsListChanged, nil)
	}
	return ok
}

func (s *Server) handlePing(context.Context, *requestState, json.RawMessage) (any, error) {
	return json.RawMessage("{}"), nil
}

func (s *Server) handleSetLevel(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	var p struct {
		Level LoggingLevel `json:"level"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	if _, ok := levelRank[p.Level]; !ok {
		return nil, Errorf(CodeInvalidParams, "invalid log level %q; use one of debug, info, notice, warning, error, critical, alert, emergency", truncate(string(p.Level), 40))
	}
	if err := s.updateShared(ctx, rs.sess, SessionChange{LogLevel: p.Level}); err != nil {
		return nil, err
	}
	rs.sess.logLevel.Store(&p.Level)
	return json.RawMessage("{}"), nil
}

func (s *Server) handleListResources(_ context.Context, _ *requestState, params json.RawMessage) (any, error) {
	cursor, err := cursorOf(params)
	if err != nil {
		return nil, err
	}
	items, next, rpcErr := s.resources.page(cursor, s.cfg.pageSize)
	if rpcErr != nil {
		return nil, rpcErr
	}
	out := &ListResourcesResult{Resources: make([]Resource, 0, len(items)), NextCursor: next}
	for _, r := range items {
		out.Resources = append(out.Resources, r.resource)
	}
	return out, nil
}

func (s *Server) handleListTemplates(_ context.Context, _ *requestState, params json.RawMessage) (any, error) {
	cursor, err := cursorOf(params)
	if err != nil {
		return nil, err
	}
	items, next, rpcErr := s.templates.page(cursor, s.cfg.pageSize)
	if rpcErr != nil {
		return nil, rpcErr
	}
	out := &ListResourceTemplatesResult{ResourceTemplates: make([]ResourceTemplate, 0, len(items)), NextCursor: next}
	for _, t := range items {
		out.ResourceTemplates = append(out.ResourceTemplates, t.template)
	}
	return out, nil
}

func (s *Server) handleReadResource(ctx context.Context, _ *requestState, params json.RawMessage) (any, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, NewError(CodeInvalidParams, `resources/read needs "uri"`)
	}
	var h ResourceHandler
	if r, ok := s.resources.get(p.URI); ok {
		h = r.handler
	} else {
		for _, t := range s.templates.all() {
			if t.match(p.URI) {
				h = t.handler
				break
			}
		}
	}
	if h == nil {
		return nil, Errorf(CodeResourceNotFound, "resource not found: %s", truncate(p.URI, 200)).WithData(map[string]string{"uri": p.URI})
	}
	res, err := h(ctx, p.URI)
	if err != nil {
		return nil, err
	}
	if res.Contents == nil {
		res.Contents = []ResourceContents{}
	}
	return res, nil
}

func (s *Server) handleSubscribe(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	uri, err := uriParam(params)
	if err != nil {
		return nil, err
	}
	if err := rs.sess.subscribe(ctx, uri); err != nil {
		return nil, err
	}
	if err := s.updateShared(ctx, rs.sess, SessionChange{Subscribe: uri}); err != nil {
		rs.sess.unsubscribe(uri)
		return nil, err
	}
	return json.RawMessage("{}"), nil
}

func (s *Server) handleUnsubscribe(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	uri, err := uriParam(params)
	if err != nil {
		return nil, err
	}
	if err := s.updateShared(ctx, rs.sess, SessionChange{Unsubscribe: uri}); err != nil {
		return nil, err
	}
	rs.sess.unsubscribe(uri)
	return json.RawMessage("{}"), nil
}

func uriParam(params json.RawMessage) (string, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return "", err
	}
	if p.URI == "" {
		return "", NewError(CodeInvalidParams, `"uri" is required`)
	}
	return p.URI, nil
}

func (s *Server) handleListPrompts(_ context.Context, _ *requestState, params json.RawMessage) (any, error) {
	cursor, err := cursorOf(params)
	if err != nil {
		return nil, err
	}
	items, next, rpcErr := s.prompts.page(cursor, s.cfg.pageSize)
	if rpcErr != nil {
		return nil, rpcErr
	}
	out := &ListPromptsResult{Prompts: make([]Prompt, 0, len(items)), NextCursor: next}
	for _, p := range items {
		out.Prompts = append(out.Prompts, p.prompt)
	}
	return out, nil
}

func (s *Server) handleGetPrompt(ctx context.Context, _ *requestState, params json.RawMessage) (any, error) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	e, ok := s.prompts.get(p.Name)
	if !ok {
		return nil, Errorf(CodeInvalidParams, "unknown prompt %q; call prompts/list for the available prompts", truncate(p.Name, 100))
	}
	var missing []string
	for _, a := range e.prompt.Arguments {
		if _, ok := p.Arguments[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, Errorf(CodeInvalidParams, "prompt %q is missing required arguments: %s", p.Name, strings.Join(missing, ", "))
	}
	res, err := e.handler(ctx, p.Arguments)
	if err != nil {
		return nil, err
	}
	if res.Messages == nil {
		res.Messages = []PromptMessage{}
	}
	return res, nil
}

func (s *Server) handleComplete(ctx context.Context, _ *requestState, params json.RawMessage) (any, error) {
	var p CompleteParams
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	complete, own := s.completeRef(&p), true
	if complete == nil {
		complete, own = s.cfg.completion, false
	}
	if complete == nil {
		if !s.hasCompleters() {
			return nil, NewError(CodeMethodNotFound, "this server does not offer completions")
		}
		// The server offers completions, not for this prompt or template: none.
		complete = func(context.Context, *CompleteParams) (*Completion, error) { return nil, nil }
	}
	switch p.Ref.Type {
	case "ref/prompt", "ref/resource":
	default:
		return nil, Errorf(CodeInvalidParams, "ref.type must be ref/prompt or ref/resource, got %q", truncate(p.Ref.Type, 40))
	}
	c, err := complete(ctx, &p)
	if err != nil {
		return nil, err
	}
	if c == nil && s.cfg.completion != nil && own {
		if c, err = s.cfg.completion(ctx, &p); err != nil {
			return nil, err
		}
	}
	if c == nil {
		c = &Completion{}
	}
	if c.Values == nil {
		c.Values = []string{}
	}
	if len(c.Values) > 100 {
		return nil, fmt.Errorf("completion handler returned %d values; the maximum is 100", len(c.Values))
	}
	return map[string]any{"completion": c}, nil
}
