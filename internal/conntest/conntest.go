// Package conntest counts what happens to an HTTP client's connections, for tests that assert
// connection reuse: the TCP connections its transport dials, those it closes, and the response
// bodies closed before they were read to the end (abandoned, which makes the transport close
// their connection instead of reusing it).
package conntest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protomcp/protomcp/runtime"
)

// Counter is an *http.Client on runtime.DefaultTransport that counts its connections.
type Counter struct {
	// Client is the counting client, for runtime.WithHTTPClient.
	Client *http.Client
	// Transport is the transport under Client.
	Transport *http.Transport
	// Dials counts TCP connections dialled.
	Dials atomic.Int64
	// Closes counts dialled connections closed.
	Closes atomic.Int64
	// Abandoned counts response bodies closed before io.EOF.
	Abandoned atomic.Int64
}

// New returns a Counter whose idle connections are closed when the test ends.
func New(tb testing.TB) *Counter {
	tb.Helper()
	c := &Counter{Transport: runtime.DefaultTransport()}
	d := &net.Dialer{Timeout: 5 * time.Second}
	c.Transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.Dials.Add(1)
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countedConn{Conn: conn, closes: &c.Closes}, nil
	}
	c.Client = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := c.Transport.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		resp.Body = &trackedBody{ReadCloser: resp.Body, abandoned: &c.Abandoned}
		return resp, nil
	})}
	tb.Cleanup(c.Transport.CloseIdleConnections)
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// countedConn counts its first Close.
type countedConn struct {
	net.Conn
	once   sync.Once
	closes *atomic.Int64
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.closes.Add(1) })
	return c.Conn.Close()
}

// trackedBody counts a body closed before it returned io.EOF.
type trackedBody struct {
	io.ReadCloser
	eof       atomic.Bool
	once      sync.Once
	abandoned *atomic.Int64
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof.Store(true)
	}
	return n, err
}

func (b *trackedBody) Close() error {
	b.once.Do(func() {
		if !b.eof.Load() {
			b.abandoned.Add(1)
		}
	})
	return b.ReadCloser.Close()
}
