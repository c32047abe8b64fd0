package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// This file serves resources (spec section "Resources"): registration of resources and
// templates, resources/list, resources/templates/list, resources/read, subscriptions and
// notifications/resources/updated. The typed adapter is in resource_typed.go.

// ResourceHandler reads a resource. For a template, uri is the concrete URI requested.
type ResourceHandler func(ctx context.Context, uri string) (*ReadResourceResult, error)

type resourceEntry struct {
	resource Resource
	handler  ResourceHandler
	call     CallFunc // resources/read inside the registration's interceptors
	listing  listing  // who sees it, and its cache hint (cache_hint.go)
}

type templateEntry struct {
	template ResourceTemplate
	handler  ResourceHandler
	match    func(uri string) bool
	call     CallFunc
	complete CompletionHandler // the template's own completions (typed templates), or nil
	listing  listing           // who sees it, and its cache hint (cache_hint.go)
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
	hc := newHandlerConfig(opts)
	e := &resourceEntry{resource: r, handler: h, call: chain(hc.interceptors, callMethod), listing: newListing(&hc)}
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
	hc := newHandlerConfig(opts)
	e := &templateEntry{template: t, handler: h, complete: complete, match: templateMatcher(t.URITemplate), call: chain(hc.interceptors, callMethod), listing: newListing(&hc)}
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
	parts := templateLiterals(tmpl)
	return func(uri string) bool {
		if !strings.HasPrefix(uri, parts[0]) {
			return false
		}
		uri = uri[len(parts[0]):]
		for _, lit := range parts[1:] {
			var ok bool
			if uri, ok = matchVar(uri, lit); !ok {
				return false
			}
		}
		return uri == ""
	}
}

// templateLiterals returns the literal text of a level-1 URI template around its variables:
// literal, var, literal, var, ..., literal, without the vars.
func templateLiterals(tmpl string) []string {
	var parts []string
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest, '}')
		if i < 0 || j < i {
			return append(parts, rest)
		}
		parts = append(parts, rest[:i])
		rest = rest[j+1:]
	}
}

// matchVar matches a {var} (one or more characters other than '/') and the literal lit after
// it (the rest of the URI when lit is the template's empty end) at the start of uri,
// returning what follows them.
func matchVar(uri, lit string) (string, bool) {
	k := len(uri)
	if lit != "" {
		k = strings.Index(uri, lit)
	}
	if k <= 0 || strings.IndexByte(uri[:k], '/') >= 0 {
		return "", false
	}
	return uri[k+len(lit):], true
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

// routeReadResource names the URI for interceptors and picks the CallFunc of the resource or
// template that will serve it.
func (s *Server) routeReadResource(req *Request) {
	routeURI(req)
	if req.Name == "" {
		return
	}
	if r, ok := s.resources.get(req.Name); ok {
		req.serve = r.call
		if s.hiddenFrom(req.rs, &r.listing) {
			req.serve = failWith(resourceNotFound(req.Name)) // WithVisibility: as if it did not exist
		}
		return
	}
	for _, t := range s.templates.all() {
		if t.match(req.Name) {
			req.serve = t.call
			if s.hiddenFrom(req.rs, &t.listing) {
				req.serve = failWith(resourceNotFound(req.Name))
			}
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

func (s *Server) handleListResources(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	token := rs.tokenInfo()
	items, next, err := s.resources.pageOf(params, s.cfg.pageSize, func(r *resourceEntry) bool { return r.listing.shows(ctx, token) })
	if err != nil {
		return nil, err
	}
	out := &ListResourcesResult{Resources: make([]Resource, 0, len(items)), NextCursor: next}
	page := make([]listHint, len(items))
	for i, r := range items {
		out.Resources = append(out.Resources, r.resource)
		page[i] = r.listing.hint()
	}
	return s.listResult(rs, out, page, s.resources.hints(func(r *resourceEntry) listHint { return r.listing.hint() }))
}

func (s *Server) handleListTemplates(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	token := rs.tokenInfo()
	items, next, err := s.templates.pageOf(params, s.cfg.pageSize, func(t *templateEntry) bool { return t.listing.shows(ctx, token) })
	if err != nil {
		return nil, err
	}
	out := &ListResourceTemplatesResult{ResourceTemplates: make([]ResourceTemplate, 0, len(items)), NextCursor: next}
	page := make([]listHint, len(items))
	for i, t := range items {
		out.ResourceTemplates = append(out.ResourceTemplates, t.template)
		page[i] = t.listing.hint()
	}
	return s.listResult(rs, out, page, s.templates.hints(func(t *templateEntry) listHint { return t.listing.hint() }))
}

// resourceNotFound is the error that answers resources/read of a URI the caller cannot see.
func resourceNotFound(uri string) *Error {
	return Errorf(CodeResourceNotFound, "resource not found: %s", truncate(uri, 200)).WithData(map[string]string{"uri": uri})
}

// handleReadResource answers resources/read with the contents of the resource, or of the
// first template that matches the URI.
func (s *Server) handleReadResource(ctx context.Context, _ *requestState, params json.RawMessage) (any, error) {
	uri, err := uriParam(params, methodResourcesRead)
	if err != nil {
		return nil, err
	}
	h := s.resourceHandler(uri)
	if h == nil {
		return nil, resourceNotFound(uri)
	}
	res, err := h(ctx, uri)
	if err != nil {
		return nil, err
	}
	if res.Contents == nil {
		res.Contents = []ResourceContents{}
	}
	return res, nil
}

// handleSubscribe serves resources/subscribe: the session is told of the resource's updates.
func (s *Server) handleSubscribe(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	uri, err := uriParam(params, methodResourcesSubscribe)
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

// handleUnsubscribe serves resources/unsubscribe.
func (s *Server) handleUnsubscribe(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	uri, err := uriParam(params, methodResourcesUnsub)
	if err != nil {
		return nil, err
	}
	if err := s.updateShared(ctx, rs.sess, SessionChange{Unsubscribe: uri}); err != nil {
		return nil, err
	}
	rs.sess.unsubscribe(uri)
	return json.RawMessage("{}"), nil
}

// uriParam reads the uri of method's params, which it needs.
func uriParam(params json.RawMessage, method string) (string, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return "", err
	}
	if p.URI == "" {
		return "", NewError(CodeInvalidParams, method+` needs "uri"`)
	}
	return p.URI, nil
}

// resourceHandler returns the handler of the resource uri, or of the first template that
// matches it, or nil.
func (s *Server) resourceHandler(uri string) ResourceHandler {
	if r, ok := s.resources.get(uri); ok {
		return r.handler
	}
	for _, t := range s.templates.all() {
		if t.match(uri) {
			return t.handler
		}
	}
	return nil
}
