package connectmcp

import (
	"fmt"
	"io"
	"net/http"
	"sync"
)

// memoryClient is a connect.HTTPClient that serves each request with a handler in memory: the
// handler runs on a goroutine of its own, reading the request's body as the caller writes it
// and writing the response's body into a pipe that the caller reads, so that streams flow as
// they would over a connection. The request's context is the handler's, so cancelling the
// call cancels the handler.
type memoryClient struct {
	h http.Handler
}

func (c memoryClient) Do(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, started: make(chan struct{})}
	if req.Body == nil {
		req.Body = http.NoBody
	}
	srvReq := req.Clone(req.Context())
	srvReq.RequestURI = req.URL.RequestURI()
	srvReq.RemoteAddr = "in-memory"
	go func() {
		defer func() {
			// As net/http does for a handler that panics: the call fails, the process goes on.
			if r := recover(); r != nil {
				w.start(http.StatusInternalServerError)
				_ = pw.CloseWithError(fmt.Errorf("connectmcp: the handler of %s panicked: %v", req.URL.Path, r))
				return
			}
			w.start(http.StatusOK)
			_ = pw.Close()
		}()
		c.h.ServeHTTP(w, srvReq)
	}()
	select {
	case <-w.started:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status:        http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        w.sent,
		Body:          pr,
		ContentLength: -1,
		Request:       req,
	}, nil
}

// pipeWriter is the http.ResponseWriter of an in-memory call.
type pipeWriter struct {
	header  http.Header
	sent    http.Header // the header as it was when the response started
	body    *io.PipeWriter
	once    sync.Once
	status  int
	started chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) { w.start(status) }

func (w *pipeWriter) start(status int) {
	w.once.Do(func() {
		w.status = status
		w.sent = w.header.Clone()
		close(w.started)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.start(http.StatusOK)
	return w.body.Write(p)
}

// Flush implements http.Flusher: the pipe hands each write to the reader as it is made.
func (w *pipeWriter) Flush() { w.start(http.StatusOK) }
