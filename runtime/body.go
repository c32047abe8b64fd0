package runtime

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// Slow clients. A POST body that trickles in (or never ends) would hold a connection and a
// goroutine for as long as the client likes; the runtime bounds the read of every body
// itself, so that it is protected whatever http.Server it is mounted on. Once a body has been
// read to its end, net/http clears the connection's read deadline itself (before its
// background read), so neither this deadline nor an http.Server ReadTimeout cuts a long SSE
// answer.

// defaultBodyReadTimeout bounds the read of a POST body.
const defaultBodyReadTimeout = 30 * time.Second

// errBodyTimeout is returned by readBody when the body did not arrive in time.
var errBodyTimeout = errors.New("mcp: the request body did not arrive in time")

// readBody reads a POST body within the size limit and the body read timeout.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if d := s.cfg.bodyReadTimeout; d > 0 {
		setReadDeadline(w, time.Now().Add(d))
	}
	var (
		body []byte
		err  error
	)
	if max := s.cfg.maxBodyBytes; r.ContentLength > 0 && r.ContentLength <= max {
		// The length is known and allowed: one buffer of that size (and a byte to see the
		// end), where io.ReadAll would start at 512 bytes and grow, behind a MaxBytesReader.
		body, err = readAllSized(r.Body, int(r.ContentLength)+1, max)
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, errBodyTimeout
	}
	return body, err
}

// readAllSized reads r to its end into a buffer of capacity size, growing it if r holds more,
// up to max bytes (then it fails with *http.MaxBytesError).
func readAllSized(r io.Reader, size int, max int64) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > max {
			return nil, &http.MaxBytesError{Limit: max}
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// setWriteDeadline sets the write deadline of w's connection, as setReadDeadline does the read
// deadline.
func setWriteDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch x := w.(type) {
		case interface{ SetWriteDeadline(time.Time) error }:
			_ = x.SetWriteDeadline(t)
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

// flushResponse flushes w to the client, as http.ResponseController.Flush does, without
// allocating a ResponseController.
func flushResponse(w http.ResponseWriter) error {
	for {
		switch x := w.(type) {
		case interface{ FlushError() error }:
			return x.FlushError()
		case http.Flusher:
			x.Flush()
			return nil
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return http.ErrNotSupported
		}
	}
}

// setReadDeadline sets the read deadline of w's connection, as http.ResponseController does,
// but without allocating an error for a ResponseWriter that has none (an in-process one).
func setReadDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch x := w.(type) {
		case interface{ SetReadDeadline(time.Time) error }:
			_ = x.SetReadDeadline(t)
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}
