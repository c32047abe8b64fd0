// Command load is the neutral load client: plain net/http and nothing of any MCP SDK. It
// initializes a session (initialize, then notifications/initialized), then runs sequential or
// concurrent tools/call callers on that session for a duration or a count, reads every answer
// (JSON or SSE) to EOF, and reports p50/p90/p99, calls/s, errors, hangs (calls past -timeout)
// and the TCP connections dialled after warm-up.
//
//	load -url http://127.0.0.1:8081/mcp -tool echo -c 64 -d 2s
//	load -url http://127.0.0.1:8080/mcp -plain     # the floor: the same POST, no session
//	load -url http://127.0.0.1:8081/mcp -modern    # MCP 2026-07-28: no session, _meta and headers
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/protomcp/protomcp/bench/internal/harness"
)

const protocolVersion = "2025-06-18"

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/mcp", "MCP endpoint")
	name := flag.String("name", "load", "name of the measurement in the output")
	plain := flag.Bool("plain", false, "floor mode: POST the same body with no initialize and no session headers")
	modern := flag.Bool("modern", false, "MCP 2026-07-28: no initialize; every call carries the request metadata in _meta and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers")
	tool := flag.String("tool", "echo", "tool to call: echo, items or slow")
	text := flag.String("text", "the quick brown fox jumps over the lazy dog", "echo's text")
	n := flag.Int("n", 500, "items' n, or slow's ms")
	callers := flag.Int("c", 1, "concurrent callers (1: sequential)")
	dur := flag.Duration("d", 2*time.Second, "how long to measure")
	count := flag.Int("count", 0, "calls per caller to measure (overrides -d)")
	warmup := flag.Int("warmup", 200, "calls per caller before measuring")
	timeout := flag.Duration("timeout", 10*time.Second, "a call running longer is a hang")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured calls to this file")
	traceFile := flag.String("trace", "", "write an execution trace of the measured calls to this file")
	flag.Parse()

	var dialer harness.Dialer
	l := &loader{url: *url, hc: dialer.HTTPClient(*callers)}
	switch *tool {
	case "echo":
		t, _ := json.Marshal(*text)
		l.args = `{"text":` + string(t) + `}`
	case "items":
		l.args = `{"n":` + strconv.Itoa(*n) + `}`
	case "slow":
		l.args = `{"ms":` + strconv.Itoa(*n) + `}`
	default:
		fmt.Fprintf(os.Stderr, "load: unknown tool %q\n", *tool)
		os.Exit(2)
	}
	l.tool = *tool
	if *modern {
		l.modern, l.version = true, modernVersion
	}
	if !*plain && !*modern {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := l.initialize(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "load: %v\n", err)
			os.Exit(1)
		}
	}
	// Everything a caller needs is made once: its request (reused once its answer has been
	// read, as net/http allows), its body buffer and reader, and its answer buffer, so that
	// the client's own cost per call is a POST, a read to EOF, and a look for the response id.
	cs := make([]*caller, *callers)
	for w := range cs {
		cs[w] = l.newCaller()
	}
	stop := harness.Profile(*cpuprofile, *traceFile)
	res := harness.Run(*name, harness.Options{Callers: *callers, Warmup: *warmup, Duration: *dur, Count: *count, Timeout: *timeout}, &dialer,
		func(ctx context.Context, w int) error {
			c := cs[w]
			c.id++
			return l.call(ctx, c, w*1_000_000_000+c.id)
		})
	stop()
	harness.Print(res)
	if l.session != "" {
		req, _ := http.NewRequest(http.MethodDelete, l.url, nil)
		l.headers(req)
		if resp, err := l.hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}

type loader struct {
	url, tool, args string
	hc              *http.Client
	session         string
	version         string
	modern          bool
}

const modernVersion = "2026-07-28"

// modernMeta is the request metadata of every modern call (spec 2026-07-28, Streamable HTTP,
// Request Metadata).
const modernMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernVersion + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"load","version":"1"}}`

func (l *loader) appendCall(b []byte, id int) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"method":"tools/call","params":{"name":"`...)
	b = append(b, l.tool...)
	b = append(b, `","arguments":`...)
	b = append(b, l.args...)
	if l.modern {
		b = append(b, modernMeta...)
	}
	return append(b, "}}"...)
}

func (l *loader) headers(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if l.session != "" {
		req.Header.Set("Mcp-Session-Id", l.session)
	}
	if l.version != "" {
		req.Header.Set("Mcp-Protocol-Version", l.version)
	}
	if l.modern {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", l.tool)
	}
}

func (l *loader) initialize(ctx context.Context) error {
	var buf bytes.Buffer
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"load","version":"1"}}}`
	resp, err := l.post(ctx, []byte(body), &buf)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("initialize: %s: %.300s", resp.Status, buf.Bytes())
	}
	l.session = resp.Header.Get("Mcp-Session-Id")
	msg, err := responseOf(resp.Header.Get("Content-Type"), buf.Bytes())
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &r); err != nil || r.Result.ProtocolVersion == "" {
		return fmt.Errorf("initialize: no protocolVersion in %.300s", msg)
	}
	l.version = r.Result.ProtocolVersion
	resp, err = l.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), &buf)
	if err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notifications/initialized: %s", resp.Status)
	}
	return nil
}

// post sends body and reads the whole answer into buf.
func (l *loader) post(ctx context.Context, body []byte, buf *bytes.Buffer) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	l.headers(req)
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	return resp, nil
}

// caller is one caller's reusable request and buffers.
type caller struct {
	id     int
	req    *http.Request
	body   []byte
	reader bytes.Reader
	idText []byte // `"id":N,` of the current call
	buf    bytes.Buffer
}

func (l *loader) newCaller() *caller {
	c := &caller{}
	c.req, _ = http.NewRequest(http.MethodPost, l.url, nil)
	l.headers(c.req)
	c.body = make([]byte, 0, 256+len(l.args))
	c.idText = make([]byte, 0, 32)
	return c
}

func (l *loader) call(ctx context.Context, c *caller, id int) error {
	c.body = l.appendCall(c.body[:0], id)
	c.reader.Reset(c.body)
	c.req.Body = io.NopCloser(&c.reader)
	c.req.ContentLength = int64(len(c.body))
	resp, err := l.hc.Do(c.req.WithContext(ctx))
	if err != nil {
		return err
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %.200s", resp.Status, c.buf.Bytes())
	}
	// The only check of the answer: the response to this call's id is in it, as a result.
	c.idText = append(strconv.AppendInt(append(c.idText[:0], `"id":`...), int64(id), 10), ',')
	b := c.buf.Bytes()
	i := bytes.Index(b, c.idText)
	if i < 0 || !bytes.HasPrefix(b[i+len(c.idText):], []byte(`"result"`)) {
		return fmt.Errorf("no result for id %d: %.200s", id, b)
	}
	return nil
}

// responseOf returns the JSON-RPC message of an answer: the body itself for JSON, the last
// data line holding a response for SSE.
func responseOf(contentType string, body []byte) ([]byte, error) {
	switch {
	case strings.HasPrefix(contentType, "application/json"):
		return body, nil
	case strings.HasPrefix(contentType, "text/event-stream"):
		var found []byte
		for line := range bytes.Lines(body) {
			data, ok := bytes.CutPrefix(line, []byte("data:"))
			if !ok {
				continue
			}
			data = bytes.TrimSpace(data)
			if bytes.Contains(data, []byte(`"result"`)) || bytes.Contains(data, []byte(`"error"`)) {
				found = data
			}
		}
		if found == nil {
			return nil, errors.New("SSE answer without a response event")
		}
		return found, nil
	default:
		return nil, fmt.Errorf("unexpected Content-Type %q", contentType)
	}
}
