// Command benchrun runs every benchmark of this module and prints one markdown table: each
// figure (medians of -rounds runs), its ratio to the floor and to each peer (medians of the
// ratios taken within each run). `make bench` at the repository root runs it.
//
// It builds the servers and clients, starts one process per server on a loopback port, runs
// the neutral load client and each SDK's client against them, then runs the handler-level
// testing.B benchmarks of this module and of the runtime package.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type server struct {
	key, label, bin string
	args            []string
	url             string
	cmd             *exec.Cmd
}

var servers = []*server{
	{key: "floor", label: "floor (plain net/http JSON)", bin: "server-floor"},
	{key: "protomcp", label: "protomcp (JSON)", bin: "server-protomcp"},
	{key: "protomcp-sse", label: "protomcp (SSE)", bin: "server-protomcp", args: []string{"-sse"}},
	{key: "gosdk", label: "go-sdk (SSE, its default)", bin: "server-gosdk"},
	{key: "gosdk-json", label: "go-sdk (JSON)", bin: "server-gosdk", args: []string{"-json"}},
	{key: "mcpgo", label: "mcp-go", bin: "server-mcpgo"},
	{key: "gosdk-stateless", label: "go-sdk (Stateless, 2026-07-28)", bin: "server-gosdk", args: []string{"-stateless"}},
}

func serverByKey(k string) *server {
	for _, s := range servers {
		if s.key == k {
			return s
		}
	}
	panic("no server " + k)
}

// metrics is one run of one row.
type metrics struct {
	P50, P90, P99, PerSec float64
	CPUPerCall            float64 // the load client's own CPU per call, µs
	Errors, Hangs         int
	NewDials              int64
	NsOp, BOp, AllocsOp   float64
	// ServerSwitches is the context switches of the server's threads per call (stdiolat's
	// rows): each a thread that blocked and was woken again.
	ServerSwitches float64 `json:",omitempty"`
}

// row is one line of the table: its runs, and how it compares.
type row struct {
	section, what, pair string
	kind                string // "lat" (p50 is the figure), "tput" (calls/s), "bench" (ns/op)
	runs                []metrics
	floor               string // key of the row it is compared with as the floor ("" none)
	peers               [2]string
}

var (
	rows   []*row
	byKey  = map[string]*row{}
	flagD  = flag.Duration("d", time.Second, "how long each load measurement runs")
	flagR  = flag.Int("rounds", 5, "runs of everything, interleaved; the table shows medians")
	flagC  = flag.Int("c", 64, "concurrent callers of the throughput rows")
	flagBT = flag.String("benchtime", "1s", "-benchtime of the testing.B benchmarks")
	flagGT = flag.Bool("gotest", true, "run the testing.B benchmarks too")
	flagO  = flag.String("json", "", "also write every row's figures, round by round, to this file (JSON)")
	flagRt = flag.String("root", "..", "the protomcp repository root (for the runtime benchmarks)")
	flagV  = flag.Bool("v", false, "print every measurement as it is taken")
)

func add(key string, r *row) *row {
	rows = append(rows, r)
	byKey[key] = r
	return r
}

func main() {
	flag.Parse()
	start := time.Now()
	dir, err := os.MkdirTemp("", "protomcp-bench-")
	check(err)
	defer os.RemoveAll(dir)

	logf("building")
	run("", "go", "build", "-o", dir+string(filepath.Separator),
		"./cmd/server-floor", "./cmd/server-protomcp", "./cmd/server-gosdk", "./cmd/server-mcpgo", "./cmd/server-stdio", "./cmd/load", "./cmd/pair", "./cmd/stdiolat")
	stdioServers["protomcp"] = filepath.Join(dir, "server-stdio") + " -sdk protomcp"
	stdioServers["gosdk"] = filepath.Join(dir, "server-stdio") + " -sdk gosdk"
	stdioServers["ts"] = tsStdioServer()
	stdioWeatherServers(dir)
	if *flagGT {
		run("", "go", "test", "-c", "-o", filepath.Join(dir, "servers.test"), "./internal/servers")
		run(*flagRt, "go", "test", "-c", "-o", filepath.Join(dir, "runtime.test"), "./runtime")
		// The gRPC bridge's module: BenchmarkEcho, the bridge and the gateway (docs/grpc.md).
		run(filepath.Join(*flagRt, "grpcmcp"), "go", "test", "-c", "-o", filepath.Join(dir, "grpcmcp.test"), ".")
		// The redis module's: a rate-limited tool call, its buckets in memory and in Redis
		// (docs/deploy.md); it starts a redis-server of its own, and skips without one.
		run(filepath.Join(*flagRt, "redis"), "go", "test", "-c", "-o", filepath.Join(dir, "redis.test"), ".")
	}

	startRedis(dir) // the replica rows' Redis and servers (replicas.go)
	defineRows()
	defineMemoryRows()
	defineReplicaRows()
	for _, s := range servers {
		startServer(dir, s)
	}
	startProxies()
	defer stopReplicaSet()
	defer func() {
		for _, s := range servers {
			if s.cmd != nil && s.cmd.Process != nil {
				_ = s.cmd.Process.Signal(os.Interrupt)
				_ = s.cmd.Wait()
			}
		}
	}()
	for r := range *flagR {
		logf("round %d of %d", r+1, *flagR)
		oneRound(dir, r)
		bracketRound(dir, r)
		memoryRound(dir, r)
		replicaRound(dir, r)
	}
	for _, s := range servers {
		_ = s.cmd.Process.Signal(os.Interrupt)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
	if *flagGT {
		logf("testing.B benchmarks (-count %d)", *flagR)
		goBench(dir, "servers.test", "bench handler")
		goBench(dir, "runtime.test", "runtime")
		goBench(dir, "grpcmcp.test", "gRPC bridge")
		goBench(dir, "redis.test", "rate limits")
	}
	printTable(time.Since(start))
	printGoals()
	if *flagO != "" {
		check(writeRuns(*flagO))
	}
}

func defineRows() {
	sec := "sequential echo, neutral client"
	add("seq/floor", &row{section: sec, what: "p50 latency", pair: "plain net/http → floor", kind: "lat"})
	for _, k := range []string{"protomcp", "protomcp-sse", "gosdk", "gosdk-json", "mcpgo"} {
		add("seq/"+k, &row{section: sec, what: "p50 latency", pair: "load → " + serverByKey(k).label, kind: "lat", floor: "seq/floor", peers: [2]string{"seq/gosdk", "seq/mcpgo"}})
	}
	sec = fmt.Sprintf("%d concurrent callers, echo, neutral client", *flagC)
	add("conc/floor", &row{section: sec, what: "calls/s", pair: "plain net/http → floor", kind: "tput"})
	for _, k := range []string{"protomcp", "protomcp-sse", "gosdk", "mcpgo"} {
		add("conc/"+k, &row{section: sec, what: "calls/s", pair: "load → " + serverByKey(k).label, kind: "tput", floor: "conc/floor", peers: [2]string{"conc/gosdk", "conc/mcpgo"}})
	}
	// MCP 2026-07-28: the neutral client sends the request metadata on every call and no
	// initialize; × go-sdk is go-sdk in the same era (its Stateless mode).
	sec = "MCP 2026-07-28 (stateless), sequential echo, neutral client"
	for _, k := range []string{"protomcp", "protomcp-sse", "gosdk-stateless"} {
		add("modern-seq/"+k, &row{section: sec, what: "p50 latency", pair: "load -modern → " + serverByKey(k).label, kind: "lat", floor: "seq/floor", peers: [2]string{"modern-seq/gosdk-stateless", ""}})
	}
	// Our own client in the same era: what a default protomcp client speaks to a protomcp
	// server (the "SDK client → server" rows below pin the session era, as the peers speak).
	for _, k := range []string{"protomcp", "protomcp-sse"} {
		add("modern-pair/"+k, &row{section: sec, what: "p50 latency", pair: "protomcp client (2026-07-28) → " + serverByKey(k).label, kind: "lat", floor: "seq/floor", peers: [2]string{"modern-seq/gosdk-stateless", ""}})
	}
	// This section measures its floor in its own rotation, as the pairings do: the goal "2026-07-28
	// at 64 callers ≥ 0.9× the floor" (printGoals) compares measurements seconds apart, not a
	// minute. Its floor is sent the same bytes as the servers (load -modern: the request
	// metadata in _meta, the three headers), which it ignores: the neutral client's cost of
	// writing them is the same whichever server reads them, so the ratio charges the servers
	// only with their own work. The session era's plain POST to the floor stays beside it
	// (modern-conc/floor-plain), for the ratio as it was measured before 2026-12-02.
	sec = fmt.Sprintf("MCP 2026-07-28 (stateless), %d concurrent callers, echo, neutral client", *flagC)
	add("modern-conc/floor", &row{section: sec, what: "calls/s", pair: "load -modern → floor (this section's: the same 2026-07-28 POST)", kind: "tput"})
	add("modern-conc/floor-plain", &row{section: sec, what: "calls/s", pair: "plain net/http → floor (the session era's POST)", kind: "tput"})
	for _, k := range []string{"protomcp", "protomcp-sse", "gosdk-stateless"} {
		add("modern-conc/"+k, &row{section: sec, what: "calls/s", pair: "load -modern → " + serverByKey(k).label, kind: "tput", floor: "modern-conc/floor", peers: [2]string{"modern-conc/gosdk-stateless", ""}})
	}
	sec = "our client against the neutral client, bracketed: neutral, ours, neutral, back to back (the neutral row: the mean of the two on either side)"
	for _, era := range []string{"sse", "modern"} {
		label := "protomcp (SSE)"
		if era == "modern" {
			label = "protomcp (JSON), MCP 2026-07-28"
		}
		add("bracket/neutral-"+era, &row{section: sec, what: "p50 latency", pair: "neutral client (load) → " + label, kind: "lat"})
		add("bracket/ours-"+era, &row{section: sec, what: "p50 latency", pair: "protomcp client → " + label, kind: "lat", floor: "bracket/neutral-" + era})
	}
	sec = "sequential items n=500, neutral client"
	for _, k := range []string{"protomcp", "protomcp-sse", "gosdk", "mcpgo"} {
		add("items/"+k, &row{section: sec, what: "p50 latency", pair: "load → " + serverByKey(k).label, kind: "lat", peers: [2]string{"items/gosdk", "items/mcpgo"}})
	}
	// The pairings have a floor of their own, measured in the rotation of our client's rows
	// (oneRound), so that their ratios compare measurements seconds apart, as those of the
	// sections above do, and not the two ends of a round.
	sec = "sequential echo, SDK client → server (peers: their own pairing)"
	add("pair/floor", &row{section: sec, what: "p50 latency", pair: "plain net/http → floor (this section's)", kind: "lat"})
	// The neutral client in the same rotation as our client's rows: the goal "our client
	// within 1.2× the neutral client" (printGoals) compares measurements seconds apart.
	for _, k := range []string{"protomcp", "protomcp-sse"} {
		add("pair/load/"+k, &row{section: sec, what: "p50 latency", pair: "neutral client (load) → " + serverByKey(k).label, kind: "lat", floor: "pair/floor", peers: [2]string{"pair/gosdk/gosdk", "pair/mcpgo/mcpgo"}})
	}
	for _, c := range []string{"protomcp", "gosdk", "mcpgo"} {
		for _, k := range []string{"protomcp", "protomcp-sse", "gosdk", "mcpgo"} {
			add("pair/"+c+"/"+k, &row{section: sec, what: "p50 latency", pair: clientLabel[c] + " client → " + serverByKey(k).label, kind: "lat", floor: "pair/floor", peers: [2]string{"pair/gosdk/gosdk", "pair/mcpgo/mcpgo"}})
		}
	}
	sec = "sequential echo over stdio, SDK client → server process (× go-sdk: go-sdk's own pairing; × mcp-go column: × the TypeScript SDK's server with the same client)"
	for _, c := range []string{"protomcp", "gosdk"} {
		for _, k := range []string{"protomcp", "gosdk", "ts"} {
			add("stdio/"+c+"/"+k, &row{section: sec, what: "p50 latency", pair: clientLabel[c] + " client → " + stdioLabel[k] + " server", kind: "lat", peers: [2]string{"stdio/gosdk/gosdk", "stdio/" + c + "/ts"}})
		}
	}
	// A real server's answer over stdio beside the least a program can do for it: read the
	// line, write a canned answer of the same bytes (bench/cmd/stdiolat).
	sec = "sequential get_forecast over stdio (1.4 KB answer), minimal newline-JSON-RPC client → server process"
	add("stdio-weather/floor", &row{section: sec, what: "p50 latency", pair: "stdiolat → floor (the same answer, canned)", kind: "lat"})
	add("stdio-weather/protomcp", &row{section: sec, what: "p50 latency", pair: "stdiolat → weather example server (-stdio)", kind: "lat", floor: "stdio-weather/floor"})
}

// stdioWeather are the commands of the stdio weather rows: the weather example's server and
// the floor that answers every call with that server's answer, canned (stdiolat -floor).
var stdioWeather = map[string]string{}

// stdioWeatherServers builds the weather server and captures its get_forecast answer for the
// floor.
func stdioWeatherServers(dir string) {
	weather := filepath.Join(dir, "weather-server")
	run(*flagRt, "go", "build", "-o", weather, "./examples/weather/server")
	answer := filepath.Join(dir, "weather-answer.json")
	run("", filepath.Join(dir, "stdiolat"), "-capture", answer, "-cmd", weather+" -stdio")
	stdioWeather["protomcp"] = weather + " -stdio"
	stdioWeather["floor"] = filepath.Join(dir, "stdiolat") + " -floor " + answer
}

var clientLabel = map[string]string{"protomcp": "protomcp", "gosdk": "go-sdk", "mcpgo": "mcp-go"}

// stdioServers are the commands of the stdio rows' servers, by SDK: protomcp's and go-sdk's
// (server-stdio) and the TypeScript SDK's (interop/ts/bench-stdio-server.mjs).
var stdioServers = map[string]string{}

var stdioLabel = map[string]string{"protomcp": "protomcp", "gosdk": "go-sdk", "ts": "TypeScript SDK"}

// tsStdioServer returns the command of the TypeScript SDK's stdio server, installing the npm
// packages of interop/ts first if they are missing.
func tsStdioServer() string {
	ts, err := filepath.Abs(filepath.Join(*flagRt, "interop", "ts"))
	check(err)
	node, err := exec.LookPath("node")
	if err != nil {
		fatalf("the stdio rows need Node.js for the TypeScript SDK's server: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ts, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		logf("npm ci in %s", ts)
		run(ts, "npm", "ci", "--no-audit", "--no-fund")
	}
	return node + " " + filepath.Join(ts, "bench-stdio-server.mjs")
}

// rotate returns xs rotated left by r: each round measures the servers of a section in
// another order, so that no server always runs first (or last) on a machine that warms up or
// slows down over a round.
func rotate[T any](xs []T, r int) []T {
	if len(xs) == 0 {
		return xs
	}
	r %= len(xs)
	return append(slices.Clone(xs[r:]), xs[:r]...)
}

// oneRound measures every row once; r rotates the order within each section.
func oneRound(dir string, r int) {
	d := (*flagD).String()
	seq := rotate([]string{"floor", "protomcp", "protomcp-sse", "gosdk", "gosdk-json", "mcpgo"}, r)
	for _, k := range seq {
		if k == "floor" {
			measure(dir, "seq/floor", "load", "-plain", "-url", serverByKey("floor").url, "-d", d)
			continue
		}
		measure(dir, "seq/"+k, "load", "-url", serverByKey(k).url, "-d", d)
	}
	c := strconv.Itoa(*flagC)
	for _, k := range rotate([]string{"floor", "protomcp", "protomcp-sse", "gosdk", "mcpgo"}, r) {
		if k == "floor" {
			measure(dir, "conc/floor", "load", "-plain", "-url", serverByKey("floor").url, "-d", d, "-c", c, "-warmup", "20")
			continue
		}
		measure(dir, "conc/"+k, "load", "-url", serverByKey(k).url, "-d", d, "-c", c, "-warmup", "20")
	}
	// The neutral client's and ours in one rotation, so that their ratio (printGoals)
	// compares measurements seconds apart.
	for _, k := range rotate([]string{"seq/protomcp", "seq/protomcp-sse", "seq/gosdk-stateless", "pair/protomcp", "pair/protomcp-sse"}, r) {
		kind, srv, _ := strings.Cut(k, "/")
		if kind == "seq" {
			measure(dir, "modern-seq/"+srv, "load", "-modern", "-url", serverByKey(srv).url, "-d", d)
			continue
		}
		measure(dir, "modern-pair/"+srv, "pair", "-client", "protomcp", "-modern", "-url", serverByKey(srv).url, "-d", d)
	}
	for _, k := range rotate([]string{"floor", "floor-plain", "protomcp", "protomcp-sse", "gosdk-stateless"}, r) {
		switch k {
		case "floor":
			measure(dir, "modern-conc/floor", "load", "-modern", "-url", serverByKey("floor").url, "-d", d, "-c", c, "-warmup", "20")
			continue
		case "floor-plain":
			measure(dir, "modern-conc/floor-plain", "load", "-plain", "-url", serverByKey("floor").url, "-d", d, "-c", c, "-warmup", "20")
			continue
		}
		measure(dir, "modern-conc/"+k, "load", "-modern", "-url", serverByKey(k).url, "-d", d, "-c", c, "-warmup", "20")
	}
	for _, k := range rotate([]string{"protomcp", "protomcp-sse", "gosdk", "mcpgo"}, r) {
		measure(dir, "items/"+k, "load", "-url", serverByKey(k).url, "-d", d, "-tool", "items", "-n", "500", "-warmup", "20")
	}
	for _, cl := range rotate([]string{"protomcp", "gosdk", "mcpgo"}, r) {
		ks := []string{"protomcp", "protomcp-sse", "gosdk", "mcpgo"}
		if cl == "protomcp" {
			// The section's floor and the neutral client, next to our client's rows.
			ks = append(ks, "floor", "load/protomcp", "load/protomcp-sse")
		}
		for _, k := range rotate(ks, r) {
			if k == "floor" {
				measure(dir, "pair/floor", "load", "-plain", "-url", serverByKey("floor").url, "-d", d)
				continue
			}
			if srv, ok := strings.CutPrefix(k, "load/"); ok {
				measure(dir, "pair/load/"+srv, "load", "-url", serverByKey(srv).url, "-d", d)
				continue
			}
			measure(dir, "pair/"+cl+"/"+k, "pair", "-client", cl, "-url", serverByKey(k).url, "-d", d)
		}
	}
	for _, cl := range rotate([]string{"protomcp", "gosdk"}, r) {
		for _, k := range rotate([]string{"protomcp", "gosdk", "ts"}, r) {
			measure(dir, "stdio/"+cl+"/"+k, "pair", "-client", cl, "-stdio", stdioServers[k], "-d", d)
		}
	}
	for _, k := range rotate([]string{"floor", "protomcp"}, r) {
		measure(dir, "stdio-weather/"+k, "stdiolat", "-once", "-d", d, "-cmd", stdioWeather[k])
	}
}

// result is what load and pair print.
type result struct {
	Calls    int     `json:"calls"`
	Errors   int     `json:"errors"`
	Hangs    int     `json:"hangs"`
	NewDials int64   `json:"new_dials"`
	P50      float64 `json:"p50_us"`
	P90      float64 `json:"p90_us"`
	P99      float64 `json:"p99_us"`
	PerSec   float64 `json:"calls_per_s"`
	CPU      float64 `json:"client_cpu_us_per_call"`
	FirstErr string  `json:"first_error"`
	Switches float64 `json:"server_switches_per_call"`
}

func measure(dir, key, bin string, args ...string) {
	byKey[key].runs = append(byKey[key].runs, measureOnce(dir, key, bin, args...))
}

// measureOnce runs bin once for the row key and returns its figures.
func measureOnce(dir, key, bin string, args ...string) metrics {
	var out, errb bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, bin), append(args, "-name", key)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if *flagV || err != nil {
		os.Stderr.Write(errb.Bytes())
	}
	var r result
	if err != nil || json.Unmarshal(out.Bytes(), &r) != nil {
		logf("%s: failed: %v", key, err)
		r.Errors = -1
	}
	return metrics{P50: r.P50, P90: r.P90, P99: r.P99, PerSec: r.PerSec, CPUPerCall: r.CPU, Errors: r.Errors, Hangs: r.Hangs, NewDials: r.NewDials, ServerSwitches: r.Switches}
}

// bracketRound measures the client goals' rows once: for each era, the neutral client, our
// client and the neutral client again, back to back against the same server, so that our
// client's figure is divided by the neutral client's measured on either side of it. This
// machine's speed drifts by a third within seconds (the neutral client's p50 moves as much
// between two runs a few seconds apart); one neutral run per rotation, other rows between,
// left the goal's ratio to that drift.
func bracketRound(dir string, r int) {
	d := (*flagD).String()
	for _, era := range rotate([]string{"sse", "modern"}, r) {
		neutral := []string{"-url", serverByKey("protomcp-sse").url, "-d", d}
		ours := []string{"-client", "protomcp", "-url", serverByKey("protomcp-sse").url, "-d", d}
		if era == "modern" {
			neutral = []string{"-modern", "-url", serverByKey("protomcp").url, "-d", d}
			ours = []string{"-client", "protomcp", "-modern", "-url", serverByKey("protomcp").url, "-d", d}
		}
		before := measureOnce(dir, "bracket/neutral-"+era, "load", neutral...)
		byKey["bracket/ours-"+era].runs = append(byKey["bracket/ours-"+era].runs, measureOnce(dir, "bracket/ours-"+era, "pair", ours...))
		after := measureOnce(dir, "bracket/neutral-"+era, "load", neutral...)
		byKey["bracket/neutral-"+era].runs = append(byKey["bracket/neutral-"+era].runs, meanMetrics(before, after))
	}
}

// meanMetrics is the mean of a and b's latencies, rates and CPU; errors and dials add up.
func meanMetrics(a, b metrics) metrics {
	if a.Errors < 0 || b.Errors < 0 {
		return metrics{Errors: -1}
	}
	return metrics{P50: (a.P50 + b.P50) / 2, P90: (a.P90 + b.P90) / 2, P99: (a.P99 + b.P99) / 2, PerSec: (a.PerSec + b.PerSec) / 2, CPUPerCall: (a.CPUPerCall + b.CPUPerCall) / 2,
		Errors: a.Errors + b.Errors, Hangs: a.Hangs + b.Hangs, NewDials: a.NewDials + b.NewDials}
}

func startServer(dir string, s *server) {
	cmd := exec.Command(filepath.Join(dir, s.bin), append(s.args, "-addr", "127.0.0.1:0")...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	check(err)
	check(cmd.Start())
	s.cmd = cmd
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		fatalf("%s: no address: %v", s.key, err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		fatalf("%s: unexpected first line %q", s.key, line)
	}
	s.url = "http://" + addr + "/mcp"
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
}

// goBench runs a compiled test binary's benchmarks and records each as a row.
func goBench(dir, bin, section string) {
	cmd := exec.Command(filepath.Join(dir, bin), "-test.run", "^$", "-test.bench", ".", "-test.benchmem",
		"-test.count", strconv.Itoa(*flagR), "-test.benchtime", *flagBT)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		os.Stderr.Write(out)
		os.Stderr.Write(errb.Bytes())
		fatalf("%s: %v", bin, err)
	}
	suffix := "-" + strconv.Itoa(goruntime.GOMAXPROCS(0))
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimSuffix(f[0], suffix)
		var m metrics
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				m.NsOp = v
			case "B/op":
				m.BOp = v
			case "allocs/op":
				m.AllocsOp = v
			}
		}
		key := bin + "/" + name
		r := byKey[key]
		if r == nil {
			r = add(key, benchRow(bin, section, name))
		}
		r.runs = append(r.runs, m)
	}
}

// benchRow describes a testing.B benchmark: BenchmarkHandler/<call>/<server> of this module,
// compared with the floor handler (echo) and the peers' handlers; Benchmark<Side><Call> of the
// runtime package, compared with the peers' handlers for the server side.
func benchRow(bin, section, name string) *row {
	r := &row{section: "per call, testing.B -benchmem (" + section + ")", what: "ns/op", kind: "bench"}
	if bin == "servers.test" {
		parts := strings.Split(strings.TrimPrefix(name, "BenchmarkHandler/"), "/")
		if len(parts) == 2 {
			call, srv := parts[0], parts[1]
			r.pair = "ServeHTTP " + call + ": " + srv
			if call == "echo" {
				r.floor = "servers.test/BenchmarkHandler/echo/floor"
			}
			r.peers = [2]string{"servers.test/BenchmarkHandler/" + call + "/gosdk", "servers.test/BenchmarkHandler/" + call + "/mcpgo"}
		}
		return r
	}
	r.pair = strings.TrimPrefix(name, "Benchmark")
	if bin == "redis.test" {
		// A rate-limited call against the same call without a limit.
		if base, kind, ok := strings.Cut(name, "RateLimit/"); ok && kind != "none" {
			r.pair += " (× floor: vs. no rate limit)"
			r.floor = bin + "/" + base + "RateLimit/none"
		}
		return r
	}
	if bin == "grpcmcp.test" {
		// A tool call through the in-process bridge against the native handler; through a
		// gateway against the gRPC call it forwards, made directly.
		switch name {
		case "BenchmarkEcho/mcp-bridge":
			r.pair += " (× floor: vs. the native handler)"
			r.floor = bin + "/BenchmarkEcho/mcp-native"
		case "BenchmarkEcho/mcp-gateway":
			r.pair += " (× floor: vs. gRPC direct)"
			r.floor = bin + "/BenchmarkEcho/grpc-direct"
		}
		return r
	}
	switch {
	case strings.HasSuffix(name, "RateLimit"):
		// The cost of a rate limit in memory, on a call it allows.
		r.pair += " (× floor: vs. no rate limit)"
		r.floor = bin + "/" + strings.TrimSuffix(name, "RateLimit")
	case strings.HasSuffix(name, "Interceptor"):
		// The cost of one no-op interceptor: its "× floor" is relative to the same call
		// without one.
		r.pair += " (× floor: vs. no interceptor)"
		r.floor = bin + "/" + strings.TrimSuffix(name, "Interceptor")
	case strings.HasPrefix(name, "BenchmarkServerEcho"):
		r.floor = "servers.test/BenchmarkHandler/echo/floor"
		r.peers = [2]string{"servers.test/BenchmarkHandler/echo/gosdk", "servers.test/BenchmarkHandler/echo/mcpgo"}
	case strings.HasPrefix(name, "BenchmarkServerItems500"):
		r.peers = [2]string{"servers.test/BenchmarkHandler/items500/gosdk", "servers.test/BenchmarkHandler/items500/mcpgo"}
	}
	return r
}

func figure(r *row, m metrics) float64 {
	switch r.kind {
	case "lat":
		return m.P50
	case "tput":
		return m.PerSec
	case "mem":
		return m.BOp
	default:
		return m.NsOp
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func col(r *row, f func(metrics) float64) float64 {
	xs := make([]float64, len(r.runs))
	for i, m := range r.runs {
		xs[i] = f(m)
	}
	return median(xs)
}

// ratio is the median over runs of r's figure divided by other's figure in the same run;
// for benchmarks it also gives the ratio of B/op.
func ratio(r *row, otherKey string) string {
	o := byKey[otherKey]
	if o == nil || o == r || len(o.runs) == 0 {
		return "—"
	}
	var xs, bs []float64
	for i := range min(len(r.runs), len(o.runs)) {
		a, b := figure(r, r.runs[i]), figure(o, o.runs[i])
		if a > 0 && b > 0 {
			xs = append(xs, a/b)
		}
		if r.kind == "bench" && o.runs[i].BOp > 0 {
			bs = append(bs, r.runs[i].BOp/o.runs[i].BOp)
		}
	}
	if len(xs) == 0 {
		return "—"
	}
	s := fmt.Sprintf("%.2f×", median(xs))
	if len(xs) > 2 {
		// The spread of the per-round ratios: how much to trust the median.
		s += fmt.Sprintf(" [%.2f–%.2f]", slices.Min(xs), slices.Max(xs))
	}
	if len(bs) > 0 {
		s += fmt.Sprintf(" (B %.2f×)", median(bs))
	}
	return s
}

func num(v float64, prec int) string {
	if v == 0 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func printTable(took time.Duration) {
	fmt.Println()
	fmt.Printf("Medians of %d rounds (load measurements %s each; testing.B -benchtime %s). Latency figures: p50; throughput: calls/s; testing.B: ns/op. Ratios: median of the per-round ratios of the figure (and of B/op) to the row named in the column header, [lowest–highest] of those ratios: lower is better, except calls/s where higher is better. Each round runs every row once, the servers of each section in a rotated order. Client CPU: the measuring client's own CPU time per call (median), so that ratios can be read as the servers' share.\n\n", *flagR, *flagD, *flagBT)
	fmt.Println("| section | client → server / benchmark | p50 µs | p90 µs | p99 µs | calls/s | client CPU µs/call | errors / hangs | new conns after warm-up | ns/op | B/op | allocs/op | × floor | × go-sdk | × mcp-go |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		if len(r.runs) == 0 {
			continue
		}
		errs, hangs, dials := 0, 0, int64(0)
		for _, m := range r.runs {
			if m.Errors < 0 {
				errs = -1 << 30
			}
			errs += m.Errors
			hangs += m.Hangs
			dials = max(dials, m.NewDials)
		}
		eh, nd := "—", "—"
		if r.kind == "mem" && errs < 0 {
			eh = "FAILED"
		}
		if r.kind != "bench" && r.kind != "mem" {
			eh = fmt.Sprintf("%d / %d", errs, hangs)
			if errs < 0 {
				eh = "FAILED"
			}
			nd = strconv.FormatInt(dials, 10)
		}
		pair := r.pair
		if sw := col(r, func(m metrics) float64 { return m.ServerSwitches }); sw > 0 {
			pair += fmt.Sprintf(" (server: %.2f context switches/call)", sw)
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.section, pair,
			num(col(r, func(m metrics) float64 { return m.P50 }), 0),
			num(col(r, func(m metrics) float64 { return m.P90 }), 0),
			num(col(r, func(m metrics) float64 { return m.P99 }), 0),
			num(col(r, func(m metrics) float64 { return m.PerSec }), 0),
			num(col(r, func(m metrics) float64 { return m.CPUPerCall }), 1),
			eh, nd,
			num(col(r, func(m metrics) float64 { return m.NsOp }), 0),
			num(col(r, func(m metrics) float64 { return m.BOp }), 0),
			num(col(r, func(m metrics) float64 { return m.AllocsOp }), 0),
			ratio(r, r.floor), ratio(r, r.peers[0]), ratio(r, r.peers[1]))
	}
	fmt.Printf("\n(took %s; new conns: the most in any round)\n", took.Round(time.Second))
}

func run(dir, name string, args ...string) {
	cmd := exec.CommandContext(context.Background(), name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchrun: "+format+"\n", args...)
}

func fatalf(format string, args ...any) {
	logf(format, args...)
	os.Exit(1)
}

func check(err error) {
	if err != nil {
		fatalf("%v", err)
	}
}

// writeRuns writes every row's figures, one entry per round, with the per-round ratios to its
// floor: what the table's medians and ranges are taken from, for reading them to more places.
func writeRuns(path string) error {
	type out struct {
		Section, Row, Figure string
		Runs                 []metrics
		Floor                string    `json:",omitempty"`
		FloorRatios          []float64 `json:",omitempty"`
	}
	var all []out
	for _, r := range rows {
		o := out{Section: r.section, Row: r.pair, Figure: r.what, Runs: r.runs, Floor: r.floor}
		if f := byKey[r.floor]; f != nil && f != r {
			for i := range min(len(r.runs), len(f.runs)) {
				if a, b := figure(r, r.runs[i]), figure(f, f.runs[i]); a > 0 && b > 0 {
					o.FloorRatios = append(o.FloorRatios, a/b)
				}
			}
		}
		all = append(all, o)
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// goal is one of the figures that issue 30 asks of the Streamable HTTP transport, read from
// two rows measured side by side: the median of the per-round ratios of row to ref (or, with
// no ref, row's own median figure, in bytes).
type goal struct {
	what, row, ref, target string
}

var goals = []goal{
	{"64 callers, SSE answers: calls/s × the floor's", "conc/protomcp-sse", "conc/floor", "≥ 0.9×"},
	{"MCP 2026-07-28, 64 callers: calls/s × the floor's (sent the same POST)", "modern-conc/protomcp", "modern-conc/floor", "≥ 0.9×"},
	{"… × the floor's sent the session era's plain POST (the ratio before 2026-12-02)", "modern-conc/protomcp", "modern-conc/floor-plain", "—"},
	{"our client, SSE answers: p50 × the neutral client's, same server (bracketed)", "bracket/ours-sse", "bracket/neutral-sse", "≤ 1.2×"},
	{"our client, MCP 2026-07-28: p50 × the neutral client's, same server (bracketed)", "bracket/ours-modern", "bracket/neutral-modern", "≤ 1.2×"},
	{"resident memory per session with an open GET stream, weather server", "mem/weather", "", "≤ 24 KB"},
	{"… × the floor's (net/http holding the same GET connections)", "mem/weather", "mem/floor", "—"},
}

// printGoals prints the goals' figures, each from rows measured side by side.
func printGoals() {
	fmt.Println()
	fmt.Println("| goal | figure [lowest–highest round] | target |")
	fmt.Println("|---|---:|---:|")
	for _, g := range goals {
		r := byKey[g.row]
		if r == nil || len(r.runs) == 0 {
			continue
		}
		fig := ""
		if g.ref == "" {
			fig = fmt.Sprintf("%.1f KB", col(r, func(m metrics) float64 { return m.BOp })/1024)
		} else {
			fig = ratio(r, g.ref)
		}
		fmt.Printf("| %s | %s | %s |\n", g.what, fig, g.target)
	}
}
