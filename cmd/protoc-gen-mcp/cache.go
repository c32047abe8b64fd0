package main

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
)

// cacheHint is a list cache hint from the proto options (mcp.v1.service).cache_ttl_ms and
// cache_scope, or the rpc's (mcp.v1.tool) ones over them (spec 2026-07-28, Caching).
type cacheHint struct {
	ttlMs int64
	scope mcpv1.CacheScope
}

// serviceCacheHint returns the hint of a service's options, or nil when they set none.
func serviceCacheHint(o *mcpv1.ServiceOptions) (*cacheHint, error) {
	if (o == nil || o.CacheTtlMs == nil) && o.GetCacheScope() == mcpv1.CacheScope_CACHE_SCOPE_UNSPECIFIED {
		return nil, nil
	}
	if o.GetCacheTtlMs() < 0 {
		return nil, fmt.Errorf("(mcp.v1.service).cache_ttl_ms is %d; it must not be negative", o.GetCacheTtlMs())
	}
	return &cacheHint{ttlMs: o.GetCacheTtlMs(), scope: o.GetCacheScope()}, nil
}

// toolCacheHint returns a tool's hint: its rpc's options over its service's, or nil when the
// rpc sets none (the service's then reaches the tool through the Register function's
// runtime.WithCacheHint).
func toolCacheHint(svc *mcpv1.ServiceOptions, o *mcpv1.ToolOptions) (*cacheHint, error) {
	if (o == nil || o.CacheTtlMs == nil) && o.GetCacheScope() == mcpv1.CacheScope_CACHE_SCOPE_UNSPECIFIED {
		return nil, nil
	}
	if o.GetCacheTtlMs() < 0 {
		return nil, fmt.Errorf("(mcp.v1.tool).cache_ttl_ms is %d; it must not be negative", o.GetCacheTtlMs())
	}
	h := &cacheHint{ttlMs: svc.GetCacheTtlMs(), scope: svc.GetCacheScope()}
	if o.CacheTtlMs != nil {
		h.ttlMs = o.GetCacheTtlMs()
	}
	if o.GetCacheScope() != mcpv1.CacheScope_CACHE_SCOPE_UNSPECIFIED {
		h.scope = o.GetCacheScope()
	}
	return h, nil
}

// literal is the hint as a runtime.CacheHint composite literal.
func (h *cacheHint) literal() []any {
	out := []any{runtimePackage.Ident("CacheHint"), "{TTL: ", strconv.FormatInt(h.ttlMs, 10), " * ", timePackage.Ident("Millisecond")}
	switch h.scope {
	case mcpv1.CacheScope_CACHE_SCOPE_PUBLIC:
		out = append(out, ", Scope: ", runtimePackage.Ident("CachePublic"))
	case mcpv1.CacheScope_CACHE_SCOPE_PRIVATE:
		out = append(out, ", Scope: ", runtimePackage.Ident("CachePrivate"))
	}
	return append(out, "}")
}

// cacheField writes a ToolSpec's Cache field when the tool's rpc sets a hint.
func cacheField(g *protogen.GeneratedFile, h *cacheHint) {
	if h == nil {
		return
	}
	g.P(append(append([]any{"Cache: &"}, h.literal()...), ",")...)
}

// serviceCacheOption writes, at the top of a Register function, the service's hint as the
// first of its options, so that every registration takes it and the caller's own options
// come after it and win.
func serviceCacheOption(g *protogen.GeneratedFile, h *cacheHint) {
	if h == nil {
		return
	}
	g.P(append(append([]any{"opts = append([]", runtimePackage.Ident("HandlerOption"), "{", runtimePackage.Ident("WithCacheHint"), "("}, h.literal()...), ")}, opts...)")...)
}
