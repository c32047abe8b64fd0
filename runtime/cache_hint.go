package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"time"
)

// This file holds what a Server says about caching its lists (spec 2026-07-28, Caching) and
// who may see what they list: the hints of registrations and of the server, and how a list
// page's hint is made of them.

// CacheScope says who may reuse a cached result (spec 2026-07-28, Caching, Cache Scope
// Field).
type CacheScope string

// The cache scopes of spec 2026-07-28, Caching.
const (
	// CacheScopeDefault, the zero value, takes the scope from the next level: a
	// registration's from the server's (WithListCacheHint), the server's is CachePrivate.
	CacheScopeDefault CacheScope = ""
	// CachePublic: the result holds nothing particular to the caller, and any client, gateway
	// or proxy may serve it to anyone.
	CachePublic CacheScope = "public"
	// CachePrivate: the result may be reused only for the same authorization context (the
	// same access token).
	CachePrivate CacheScope = "private"
)

// CacheHint is how long a client may consider a list fresh, and who may share it (spec
// 2026-07-28, Caching: the result's ttlMs and cacheScope). It is given for a server's lists
// (WithListCacheHint) and for one registration (ToolSpec.Cache, WithCacheHint), which the
// lists it appears on take into account: a page is fresh for the shortest TTL of what it
// lists, and public only when everything its list can hold is public and the list is the
// same for every caller.
type CacheHint struct {
	// TTL is how long the list stays fresh; zero, immediately stale (the client may ask
	// again every time). It is sent in whole milliseconds; a negative TTL counts as zero.
	TTL time.Duration
	// Scope is who may share the cached list; CacheScopeDefault takes it from the server
	// (see CacheScopeDefault).
	Scope CacheScope
}

// listing is what a registration says about who sees it and how its lists are cached
// (WithCacheHint, WithVisibility, ToolSpec.Cache).
type listing struct {
	cache   *CacheHint
	visible func(context.Context, *TokenInfo) bool
}

// newListing returns the listing of a registration configured by c.
func newListing(c *handlerConfig) listing {
	return listing{cache: c.cache, visible: c.visible}
}

// shows reports whether the caller of ctx, with token, may see the registration.
func (l *listing) shows(ctx context.Context, token *TokenInfo) bool {
	return l.visible == nil || l.visible(ctx, token)
}

// hint returns what the registration contributes to its list's hint.
func (l *listing) hint() listHint {
	return listHint{cache: l.cache, personal: l.visible != nil}
}

// listHint is what one listed entry contributes to its list's hint: its own hint (nil for
// the server's), whether it is hidden from some callers (a visibility predicate, or scopes
// under WithListsByScope).
type listHint struct {
	cache    *CacheHint
	personal bool
}

// pageHint is the hint of a list page: the shortest TTL of its entries (the server's when
// none has its own, or the page is empty), and public only when the server's scope and every
// entry of the whole list (spec 2026-07-28, Caching, Interaction with Pagination: one scope
// for every page) are public and none is hidden from some callers.
type pageHint struct {
	ttl    time.Duration
	public bool
}

// members returns the hint as the result's members, with a comma after them.
func (h pageHint) members() string {
	scope := CachePrivate
	if h.public {
		scope = CachePublic
	}
	ms := max(h.ttl.Milliseconds(), 0)
	return `"ttlMs":` + strconv.FormatInt(ms, 10) + `,"cacheScope":"` + string(scope) + `",`
}

// listHintOf computes a page's hint from the server's and its entries': page are the entries
// on the page, all every entry of the list.
func (s *Server) listHintOf(page []listHint, all iter.Seq[listHint]) pageHint {
	def := s.cfg.listCache
	h := pageHint{ttl: def.TTL, public: def.Scope == CachePublic}
	for i, e := range page {
		ttl := def.TTL
		if e.cache != nil {
			ttl = e.cache.TTL
		}
		if i == 0 || ttl < h.ttl {
			h.ttl = ttl
		}
	}
	first := true
	for e := range all {
		if first {
			h.public, first = true, false // a list with entries: theirs decide
		}
		scope := def.Scope
		if e.cache != nil && e.cache.Scope != CacheScopeDefault {
			scope = e.cache.Scope
		}
		if e.personal || scope != CachePublic {
			h.public = false
			break
		}
	}
	return h
}

// withListHint puts a list page's hint first in its result object (body, which starts with
// '{'), where modernBody finds it, when the request's era carries one: the 2026-07-28 era
// always (spec 2026-07-28, Caching: cacheable results MUST carry them), the session era only
// when the TTL is positive, which only a configured hint makes it (2025-11-25 defines no
// caching, and its Result allows members it does not define, which clients that do not know
// them ignore).
func withListHint(rs *requestState, body []byte, h pageHint) []byte {
	modern := rs != nil && rs.sess != nil && rs.sess.stateless
	if !modern && h.ttl < time.Millisecond {
		return body
	}
	m := h.members()
	if len(body) == 2 { // {}
		m = m[:len(m)-1]
	}
	out := make([]byte, 0, len(body)+len(m))
	out = append(out, '{')
	out = append(out, m...)
	return append(out, body[1:]...)
}

// hiddenFrom reports whether a registration's visibility predicate hides it from the caller
// of rs (WithVisibility), for the route of a call, which runs before the handler's context.
func (s *Server) hiddenFrom(rs *requestState, l *listing) bool {
	if l.visible == nil {
		return false
	}
	ctx := s.baseCtx
	if rs != nil {
		ctx = rs.handlerContext(ctx)
	}
	return !l.visible(ctx, rs.tokenInfo())
}

// tokenInfo returns the token of the request's HTTP request, or nil.
func (rs *requestState) tokenInfo() *TokenInfo {
	if rs == nil {
		return nil
	}
	return rs.token
}

// listResult encodes a list page with its cache hint (withListHint).
func (s *Server) listResult(rs *requestState, out any, page []listHint, all iter.Seq[listHint]) (any, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode list: %w", err)
	}
	return json.RawMessage(withListHint(rs, b, s.listHintOf(page, all))), nil
}
