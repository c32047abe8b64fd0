package main

// The memory rows: what a server process holds, in resident memory, per session with its
// standalone GET stream open (MCP spec 2025-11-25, Transports, Streamable HTTP, Listening for
// Messages from the Server), beside the floor's process holding as many GET connections with a
// handler that only answers 200 and waits. The sessions are made by benchrun itself: initialize
// and notifications/initialized on a keep-alive client, then each GET on a bare TCP connection
// that is never read.

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var flagSessMem = flag.Int("sessmem", 2000, "sessions with a GET stream in each memory row (0: no memory rows); each costs a file descriptor here and one in the server")

func defineMemoryRows() {
	if *flagSessMem <= 0 {
		return
	}
	sec := fmt.Sprintf("resident memory per session with an open GET stream, %d sessions (B/op column: bytes per session, VmRSS)", *flagSessMem)
	add("mem/floor", &row{section: sec, what: "bytes", pair: "floor: net/http, a GET handler that waits", kind: "mem"})
	add("mem/weather", &row{section: sec, what: "bytes", pair: "weather example server", kind: "mem", floor: "mem/floor"})
}

// memoryRound measures the memory rows once, each server a new process.
func memoryRound(dir string, r int) {
	if *flagSessMem <= 0 {
		return
	}
	for _, k := range rotate([]string{"floor", "weather"}, r) {
		var m metrics
		var err error
		if k == "floor" {
			m.BOp, err = sessionMemory(filepath.Join(dir, "server-floor"), []string{"-addr", "127.0.0.1:0"}, false)
		} else {
			m.BOp, err = sessionMemory(filepath.Join(dir, "weather-server"), []string{"-addr", "127.0.0.1:0"}, true)
		}
		if err != nil {
			logf("mem/%s: %v", k, err)
			m.Errors = -1
		}
		byKey["mem/"+k].runs = append(byKey["mem/"+k].runs, m)
	}
}

// addrLine finds the address a server prints when it listens: bench servers' "listening on
// ADDR", the weather server's log line "url=http://ADDR/mcp".
var addrLine = regexp.MustCompile(`(?:listening on |url=http://)([0-9.]+:[0-9]+)`)

// sessionMemory starts bin, makes *flagSessMem sessions on it (with initialize when
// sessions, else only the GET streams), opens their GET streams, and returns the growth of
// the process's resident memory per session.
func sessionMemory(bin string, args []string, sessions bool) (float64, error) {
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = cmd.Stdout // the weather server logs its URL on stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	br := bufio.NewReader(out)
	addr := ""
	for addr == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("no address: %w", err)
		}
		if m := addrLine.FindStringSubmatch(line); m != nil {
			addr = m[1]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	url := "http://" + addr + "/mcp"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	if sessions { // one session first, so that the server's first-use costs are in the baseline
		if _, err := initSession(hc, url); err != nil {
			return 0, err
		}
	}
	time.Sleep(200 * time.Millisecond)
	before, err := rss(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	n := *flagSessMem
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		sid := ""
		if sessions {
			if sid, err = initSession(hc, url); err != nil {
				return 0, err
			}
		}
		c, err := openGET(addr, sid)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
	}
	time.Sleep(500 * time.Millisecond) // every stream's writer settled
	after, err := rss(cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}

// initSession makes a session (initialize, notifications/initialized) and returns its ID.
func initSession(hc *http.Client, url string) (string, error) {
	post := func(sid, body string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return nil, fmt.Errorf("POST %.40s: %s", body, resp.Status)
		}
		return resp, nil
	}
	resp, err := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"benchrun","version":"1"}}}`)
	if err != nil {
		return "", err
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	_, err = post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid, err
}

// openGET opens a GET stream on a bare connection and waits for its status line.
func openGET(addr, sid string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	hdr := ""
	if sid != "" {
		hdr = "Mcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: 2025-11-25\r\n"
	}
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s\r\n", addr, hdr)
	var buf [12]byte
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, buf[:]); err != nil || string(buf[9:12]) != "200" {
		c.Close()
		return nil, fmt.Errorf("GET stream: %v %q", err, buf)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, nil
}

// rss is the resident set of process pid, in bytes (VmRSS of /proc/PID/status).
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
