// Command stdiolat measures a stdio MCP server beside a floor: a minimal newline-JSON-RPC
// client launches the server, initializes, and makes one get_forecast call at a time, timing
// each; then it launches itself as the floor, a program that reads each line and answers it
// with the server's own answer, canned (the same bytes, the id spliced in). Rounds of both
// alternate, so that both see the same machine. It prints p50 and p90 latency per call, and
// the context switches of the server's threads per call (from /proc: each is a thread that
// blocked and was woken again, the wake-ups of the call).
//
//	stdiolat -d 2s -rounds 3 -- weather-server -stdio
//	stdiolat -floor answer.json    # the floor itself, as stdiolat launches it
//
// For benchrun, which alternates the programs itself: -capture writes the server's answer to a
// file, and -once measures one program (-cmd) once and prints benchrun's JSON result.
//
//	stdiolat -capture answer.json -cmd "weather-server -stdio"
//	stdiolat -once -d 1s -cmd "stdiolat -floor answer.json"
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	flagD      = flag.Duration("d", 2*time.Second, "how long each round calls")
	flagRounds = flag.Int("rounds", 3, "rounds of each program, alternating")
	flagFloor  = flag.String("floor", "", "serve as the floor: answer every request with this file's answer")
	flagCall   = flag.String("call", `"method":"tools/call","params":{"name":"get_forecast","arguments":{"city":"Paris, FR","days":3}}`, "the request after its id")
	flagJSON   = flag.Bool("json", false, "print the result as one JSON object")
	flagCmd    = flag.String("cmd", "", "the program to launch, split at spaces (instead of the arguments after --)")
	flagOnce   = flag.Bool("once", false, "measure the program once and print benchrun's JSON result")
	flagSave   = flag.String("capture", "", "write the program's answer to this file, and measure nothing")
	_          = flag.String("name", "", "the row's name (benchrun passes it; unused)")
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdiolat","version":"1"}}}` + "\n"

func main() {
	flag.Parse()
	if *flagFloor != "" {
		check(floor(*flagFloor))
		return
	}
	args := flag.Args()
	if *flagCmd != "" {
		args = strings.Fields(*flagCmd)
	}
	if len(args) == 0 {
		fatalf("usage: stdiolat [-d 2s] [-rounds 3] -- server-command args...")
	}
	if *flagOnce {
		r, err := measure(args, *flagD)
		check(err)
		r = merge([]result{r})
		out, _ := json.Marshal(map[string]any{
			"calls": r.Calls, "p50_us": us(r.P50), "p90_us": us(r.P90), "p99_us": us(r.p99),
			"calls_per_s": float64(r.Calls) / flagD.Seconds(), "server_switches_per_call": r.Switches,
		})
		fmt.Println(string(out))
		return
	}
	answer, err := capture(args)
	check(err)
	if *flagSave != "" {
		check(os.WriteFile(*flagSave, answer, 0o600))
		return
	}
	dir, err := os.MkdirTemp("", "stdiolat-")
	check(err)
	defer os.RemoveAll(dir)
	answerFile := filepath.Join(dir, "answer.json")
	check(os.WriteFile(answerFile, answer, 0o600))
	self, err := os.Executable()
	check(err)
	floorCmd := []string{self, "-floor", answerFile}

	var server, floorRes []result
	for range *flagRounds {
		r, err := measure(args, *flagD)
		check(err)
		server = append(server, r)
		r, err = measure(floorCmd, *flagD)
		check(err)
		floorRes = append(floorRes, r)
	}
	s, f := merge(server), merge(floorRes)
	if *flagJSON {
		out, _ := json.Marshal(map[string]any{
			"answer_bytes": len(answer), "server": s, "floor": f,
			"p50_ratio": float64(s.P50) / float64(f.P50),
		})
		fmt.Println(string(out))
		return
	}
	fmt.Printf("answer: %d bytes; %d rounds of %v each\n", len(answer), *flagRounds, *flagD)
	fmt.Printf("%-8s %10s %10s %10s %16s\n", "", "calls", "p50", "p90", "switches/call")
	for _, row := range []struct {
		name string
		r    result
	}{{"server", s}, {"floor", f}} {
		fmt.Printf("%-8s %10d %10v %10v %16.2f\n", row.name, row.r.Calls, row.r.P50, row.r.P90, row.r.Switches)
	}
	fmt.Printf("server p50 / floor p50: %.2fx\n", float64(s.P50)/float64(f.P50))
}

// result is one round's figures, or several rounds' merged.
type result struct {
	Calls    int           `json:"calls"`
	P50      time.Duration `json:"p50_ns"`
	P90      time.Duration `json:"p90_ns"`
	Switches float64       `json:"switches_per_call"`
	p99      time.Duration
	lat      []time.Duration
	switches int64
}

// us returns d in microseconds.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func merge(rs []result) result {
	var m result
	for _, r := range rs {
		m.lat = append(m.lat, r.lat...)
		m.switches += r.switches
	}
	slices.Sort(m.lat)
	m.Calls = len(m.lat)
	if m.Calls > 0 {
		m.P50 = m.lat[m.Calls/2]
		m.P90 = m.lat[m.Calls*9/10]
		m.p99 = m.lat[m.Calls*99/100]
		m.Switches = float64(m.switches) / float64(m.Calls)
	}
	return m
}

// conn is a launched server and the client's ends of its pipes.
type conn struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	buf []byte
}

func launch(args []string) (*conn, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &conn{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), id: 1}
	if _, err := io.WriteString(in, initialize); err != nil {
		return nil, err
	}
	if _, err := c.response(); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return nil, err
	}
	return c, nil
}

// call makes one call and returns its response line (valid until the next read).
func (c *conn) call() ([]byte, error) {
	c.id++
	c.buf = append(c.buf[:0], `{"jsonrpc":"2.0","id":`...)
	c.buf = strconv.AppendInt(c.buf, int64(c.id), 10)
	c.buf = append(c.buf, ',')
	c.buf = append(c.buf, *flagCall...)
	c.buf = append(c.buf, "}\n"...)
	if _, err := c.in.Write(c.buf); err != nil {
		return nil, err
	}
	return c.response()
}

// response reads lines until a response (a line without a method), skipping notifications.
func (c *conn) response() ([]byte, error) {
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(line, []byte(`"method"`)) {
			return line, nil
		}
	}
}

func (c *conn) close() {
	_ = c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// capture launches the server once and returns its answer to the call, trimmed.
func capture(args []string) ([]byte, error) {
	c, err := launch(args)
	if err != nil {
		return nil, err
	}
	defer c.close()
	line, err := c.call()
	if err != nil {
		return nil, err
	}
	if bytes.Contains(line, []byte(`"error"`)) || bytes.Contains(line, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("the call failed: %s", line)
	}
	return bytes.TrimSpace(bytes.Clone(line)), nil
}

// measure runs one round against a freshly launched program.
func measure(args []string, d time.Duration) (result, error) {
	c, err := launch(args)
	if err != nil {
		return result{}, err
	}
	defer c.close()
	for range 200 { // warm up
		if _, err := c.call(); err != nil {
			return result{}, err
		}
	}
	before := contextSwitches(c.cmd.Process.Pid)
	var r result
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		start := time.Now()
		if _, err := c.call(); err != nil {
			return result{}, err
		}
		r.lat = append(r.lat, time.Since(start))
	}
	r.switches = contextSwitches(c.cmd.Process.Pid) - before
	return r, nil
}

// contextSwitches sums the voluntary and involuntary context switches of a process's threads.
func contextSwitches(pid int) int64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				k, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += k
			} else if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				k, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += k
			}
		}
	}
	return n
}

// floor answers initialize, and every other request with the canned answer, its id replaced
// by the request's.
func floor(answerFile string) error {
	answer, err := os.ReadFile(answerFile)
	if err != nil {
		return err
	}
	answer = bytes.TrimSpace(answer)
	const idKey = `"id":`
	i := bytes.Index(answer, []byte(idKey))
	if i < 0 {
		return fmt.Errorf("no id in the answer")
	}
	j := i + len(idKey) + bytes.IndexByte(answer[i+len(idKey):], ',')
	prefix, suffix := answer[:i+len(idKey)], answer[j:]
	initAnswer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"1"}}}` + "\n")
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := os.Stdout
	buf := make([]byte, 0, len(answer)+32)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return nil // stdin ended
		}
		k := bytes.Index(line, []byte(idKey))
		if k < 0 {
			continue // a notification
		}
		if bytes.Contains(line, []byte(`"initialize"`)) {
			if _, err := out.Write(initAnswer); err != nil {
				return err
			}
			continue
		}
		id := line[k+len(idKey):]
		id = id[:bytes.IndexByte(id, ',')]
		buf = append(append(append(append(buf[:0], prefix...), id...), suffix...), '\n')
		if _, err := out.Write(buf); err != nil {
			return err
		}
	}
}

func check(err error) {
	if err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "stdiolat: "+format+"\n", args...)
	os.Exit(1)
}
