package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// httpTransport carries a Client's messages over Streamable HTTP (spec 2025-11-25,
// Transports, Streamable HTTP; spec 2026-07-28, Streamable HTTP): a POST per message, its
// answer as JSON or an SSE stream, the standalone GET stream (or subscriptions/listen), and
// DELETE to end a session.
type httpTransport struct{ c *Client }

func (t *httpTransport) exchange(ctx context.Context, st *clientSession, r *Request, id ID, body []byte, co *callOptions) (json.RawMessage, string, error) {
	raw, hdr, err := t.c.httpExchange(ctx, st, r, id, body, co)
	if r.initSession != nil {
		return raw, hdr.Get(headerSessionID), err
	}
	return raw, "", err
}

func (t *httpTransport) post(ctx context.Context, st *clientSession, body []byte) error {
	return t.c.httpPost(ctx, st, body)
}

func (t *httpTransport) listen(st *clientSession, ready chan struct{}) {
	if st.modern {
		t.c.listenModern(st, ready) // subscriptions/listen (client_era.go)
	} else {
		t.c.listen(st, ready)
	}
}

func (t *httpTransport) endSession(ctx context.Context, st *clientSession) error {
	return t.c.sendDelete(ctx, st)
}

func (t *httpTransport) close(context.Context) error {
	if t.c.owns {
		t.c.hc.CloseIdleConnections()
	}
	return nil
}

// directTransport is how the client sends its requests when http.Client.Do would add nothing:
// the http.Client has no cookie jar and no timeout, and the endpoint's URL no user info. Then
// the client calls the transport itself and skips the copy of the headers, the URL and the
// closures that Do makes for every request in case it redirects. A redirect is still
// followed by Do, with the client's redirect policy, starting from the response at hand
// (replayTransport): no request is sent twice.
type directTransport struct {
	rt http.RoundTripper
	hc *http.Client
	// std: rt is net/http's *http.Transport, which never modifies a request, so that requests
	// may share one header map.
	std bool
	url string // the endpoint's URL, as url.Error reports it
}

// newDirectTransport returns the direct transport of hc for requests to u, or nil when only
// hc.Do does what hc asks for.
func newDirectTransport(hc *http.Client, u *url.URL) *directTransport {
	if hc.Jar != nil || hc.Timeout != 0 || u == nil || u.User != nil {
		return nil
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	_, std := rt.(*http.Transport)
	return &directTransport{rt: rt, hc: hc, std: std, url: u.String()}
}

// do sends req as hc.Do would: its errors are *url.Error, its response has a body, and a
// redirect is followed by hc.Do.
func (d *directTransport) do(req *http.Request) (*http.Response, error) {
	resp, err := d.rt.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: req.Method[:1] + strings.ToLower(req.Method[1:]), URL: d.url, Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		hc := *d.hc
		hc.Transport = &replayTransport{first: resp, rt: d.rt}
		return hc.Do(req)
	}
	return resp, nil
}

// replayTransport answers its first request with a response already received, and sends the
// others on rt: it lets http.Client.Do follow a redirect the client met on its own.
type replayTransport struct {
	first *http.Response
	rt    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *replayTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp := t.first; resp != nil {
		t.first = nil
		return resp, nil
	}
	return t.rt.RoundTrip(req)
}
