package runtime

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// This file is the Client's cache of list pages (spec 2026-07-28, Caching): what it keeps,
// for how long and for whom is documented on ListTools.

// AuthorizationContextTransport is implemented by an http.RoundTripper that authorizes a
// Client's requests itself, such as runtime/oauth's (WithOAuth). AuthorizationContext
// identifies the credentials it sends now, without revealing them, and changes whenever they
// change (a new access token, a step-up to more scopes), so that the Client reuses a list
// page marked private only for the credentials that fetched it (spec 2026-07-28, Caching,
// Cache Scope Field). The Client asks the outermost transport of its HTTP client, and those
// it wraps through an Unwrap() http.RoundTripper method.
type AuthorizationContextTransport interface {
	http.RoundTripper
	AuthorizationContext() string
}

// maxCachedPages bounds the list pages a Client keeps: a server's cursors are its own, and a
// client paging through a long list should not grow without bound.
const maxCachedPages = 256

// listCache is a Client's cache of list pages.
type listCache struct {
	mu    sync.Mutex
	pages map[listKey]cachedPage
}

// listKey is a cached page's method and cursor.
type listKey struct{ method, cursor string }

// cachedPage is a page as the server sent it, until when it is fresh, and, for a private
// page, the authorization context that fetched it.
type cachedPage struct {
	raw     json.RawMessage
	expires time.Time
	private bool
	auth    string
}

// get returns the page of method at cursor if it is fresh and may be served in the
// authorization context auth.
func (lc *listCache) get(method, cursor, auth string) (json.RawMessage, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	p, ok := lc.pages[listKey{method, cursor}]
	if !ok {
		return nil, false
	}
	if !time.Now().Before(p.expires) || (p.private && p.auth != auth) {
		delete(lc.pages, listKey{method, cursor})
		return nil, false
	}
	return p.raw, true
}

// put keeps a page the server sent in the authorization context auth, if its hints say it
// stays fresh for a while.
func (lc *listCache) put(method, cursor, auth string, raw json.RawMessage) {
	var h struct {
		TTLMs      *float64 `json:"ttlMs"`
		CacheScope string   `json:"cacheScope"`
	}
	if json.Unmarshal(raw, &h) != nil || h.TTLMs == nil || *h.TTLMs < 1 {
		return // immediately stale: absent, zero or negative (Time-to-Live Field)
	}
	ttl := time.Duration(min(*h.TTLMs, float64(365*24*time.Hour/time.Millisecond))) * time.Millisecond
	now := time.Now()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.pages == nil {
		lc.pages = make(map[listKey]cachedPage)
	}
	if len(lc.pages) >= maxCachedPages {
		for k, p := range lc.pages {
			if !now.Before(p.expires) {
				delete(lc.pages, k)
			}
		}
		if len(lc.pages) >= maxCachedPages {
			clear(lc.pages)
		}
	}
	// Anything but "public" is private: the safe reading of a scope the client does not know.
	private := h.CacheScope != string(CachePublic)
	lc.pages[listKey{method, cursor}] = cachedPage{raw: raw, expires: now.Add(ttl), private: private, auth: auth}
}

// drop forgets every page of the methods.
func (lc *listCache) drop(methods ...string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for k := range lc.pages {
		for _, m := range methods {
			if k.method == m {
				delete(lc.pages, k)
			}
		}
	}
}

// listChanged drops the pages a list_changed notification makes stale (spec 2026-07-28,
// Caching, Interaction with Notifications).
func (c *Client) listChanged(method string) {
	switch method {
	case notifToolsListChanged:
		c.lists.drop(methodToolsList)
	case notifPromptsListChanged:
		c.lists.drop(methodPromptsList)
	case notifResourcesListChanged:
		c.lists.drop(methodResourcesList, methodResourceTemplates)
	}
}

// toolCallFailed drops the cached tools pages when a tool call failed as a stale list would
// make it fail: the tool is unknown or its arguments invalid (-32602), or the method is
// (spec 2026-07-28, Caching, Freshness Calculation: a client MAY re-fetch before the TTL
// expires on such an error).
func (c *Client) toolCallFailed(err error) {
	switch CodeOf(err) {
	case CodeInvalidParams, CodeMethodNotFound:
		c.lists.drop(methodToolsList)
	}
}

// authorizationContext returns the authorization context of the Client's HTTP transport
// (AuthorizationContextTransport), or "" when it has none.
func (c *Client) authorizationContext() string {
	if c.hc == nil {
		return ""
	}
	rt := c.hc.Transport
	for range 8 {
		switch t := rt.(type) {
		case AuthorizationContextTransport:
			return t.AuthorizationContext()
		case interface{ Unwrap() http.RoundTripper }:
			rt = t.Unwrap()
		default:
			return ""
		}
	}
	return ""
}
