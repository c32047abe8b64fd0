package redismcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	redismcp "github.com/protomcp/protomcp/redis"
	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// The replica processes of these tests are this test binary, started again with
// PROTOMCP_REPLICA_REDIS set: TestMain then serves one replica and never runs the tests.
func TestMain(m *testing.M) {
	if u := os.Getenv("PROTOMCP_REPLICA_REDIS"); u != "" {
		if err := serveReplica(u); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// legacy makes a client speak the 2025-11-25 era, whose sessions the replicas share.
var legacy = runtime.WithEra(runtime.EraLegacy)

// testLease is the replicas' lease: how long after a SIGKILL the others give up on it.
const testLease = 1500 * time.Millisecond

// limitedQuota is what the replicas' tool "limited" allows each caller in an hour, all
// replicas together (TestReplicaSetRateLimit).
const limitedQuota = 30

// serveReplica serves one replica on a free port, prints "listening <addr>" on stdout, and
// runs until SIGTERM (or SIGKILL).
func serveReplica(redisURL string) error {
	store, err := redismcp.Dial(redisURL, redismcp.Options{Lease: testLease})
	if err != nil {
		return err
	}
	defer store.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := append(store.ServerOptions(), runtime.WithLogger(log), runtime.WithRetryInterval(100*time.Millisecond),
		runtime.WithRateLimit(runtime.RateLimitStore(store.Limiter())))
	srv := runtime.NewServer(runtime.Implementation{Name: "replica"}, opts...)
	// limited allows each caller limitedQuota calls an hour, for the whole replica set.
	srv.AddTool(runtime.ToolSpec{Name: "limited", RateLimits: []runtime.RateLimit{{Rate: runtime.Rate{Calls: limitedQuota, Period: time.Hour}}}},
		func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent("ok")}}, nil
		})
	text := func(s string) *runtime.CallToolResult {
		return &runtime.CallToolResult{Content: []runtime.Content{runtime.TextContent(s)}}
	}
	srv.AddTool(runtime.ToolSpec{Name: "whoami"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		return text(srv.ReplicaID()), nil
	})
	// slow streams five progress notifications, then works until its replica is killed.
	srv.AddTool(runtime.ToolSpec{Name: "slow"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		c := runtime.CallerFrom(ctx)
		for i := 1; i <= 5; i++ {
			if err := c.NotifyProgress(ctx, float64(i), 5, ""); err != nil {
				return nil, err
			}
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(runtime.ToolSpec{Name: "sample"}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		res, err := runtime.CallerFrom(ctx).CreateMessage(ctx, &runtime.CreateMessageParams{
			Messages:  []runtime.SamplingMessage{{Role: "user", Content: runtime.TextContent("hello")}},
			MaxTokens: 10,
		})
		if err != nil {
			return nil, err
		}
		return text(srv.ReplicaID() + ":" + res.Content.Text), nil
	})
	var extra int
	var mu sync.Mutex
	srv.AddTool(runtime.ToolSpec{Name: "change_tools"}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		mu.Lock()
		extra++
		name := "extra_" + strconv.Itoa(extra)
		mu.Unlock()
		srv.AddTool(runtime.ToolSpec{Name: name}, func(context.Context, *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
			return text(name), nil
		})
		return text(name), nil
	})
	srv.AddTool(runtime.ToolSpec{Name: "update_resource"}, func(_ context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		srv.NotifyResourceUpdated("res://a")
		return text("ok"), nil
	})
	// gated streams progress 1 to 3, waits for gate args.a, streams 4 and 5, waits for gate
	// args.b, and answers "done"; the test opens the gates (GET /gate?name=).
	gates := map[string]chan struct{}{}
	gate := func(name string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if gates[name] == nil {
			gates[name] = make(chan struct{})
		}
		return gates[name]
	}
	srv.AddTool(runtime.ToolSpec{Name: "gated"}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var args struct{ A, B string }
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			return nil, err
		}
		c := runtime.CallerFrom(ctx)
		for i := 1; i <= 5; i++ {
			if i == 4 {
				select {
				case <-gate(args.A):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if err := c.NotifyProgress(ctx, float64(i), 5, ""); err != nil {
				return nil, err
			}
		}
		select {
		case <-gate(args.B):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text("done"), nil
	})
	// job runs as a task until gate args.a opens, and answers with its replica's ID (it counts
	// the times its context was cancelled: GET /tasks-cancelled); forever runs as a task until
	// its replica dies.
	var jobsCancelled atomic.Int32
	srv.AddTool(runtime.ToolSpec{Name: "job", TaskSupport: runtime.TaskOptional}, func(ctx context.Context, req *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		var args struct{ A string }
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			return nil, err
		}
		_ = runtime.CallerFrom(ctx).SetStatusMessage(ctx, "waiting for "+args.A)
		select {
		case <-gate(args.A):
			return text("done by " + srv.ReplicaID()), nil
		case <-ctx.Done():
			jobsCancelled.Add(1)
			return nil, ctx.Err()
		}
	})
	srv.AddTool(runtime.ToolSpec{Name: "forever", TaskSupport: runtime.TaskRequired}, func(ctx context.Context, _ *runtime.CallToolRequest) (*runtime.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddResource(runtime.Resource{URI: "res://a", Name: "a"}, func(_ context.Context, uri string) (*runtime.ReadResourceResult, error) {
		return &runtime.ReadResourceResult{Contents: []runtime.ResourceContents{runtime.TextResource(uri, "text/plain", "a")}}, nil
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	mux.HandleFunc("/gate", func(w http.ResponseWriter, r *http.Request) {
		close(gate(r.URL.Query().Get("name")))
	})
	mux.HandleFunc("/tasks-cancelled", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, jobsCancelled.Load())
	})
	mux.HandleFunc("/goroutines", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, goruntime.NumGoroutine())
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("listening %s %s\n", ln.Addr(), srv.ReplicaID())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	return hs.Shutdown(ctx)
}

// redisServer is a redis-server process of the test's own, on a free port, without
// persistence. PROTOMCP_REDIS_SERVER names another binary taking the same flags
// (valkey-server).
type redisServer struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedis(t testing.TB) *redisServer {
	name := "redis-server"
	if v := os.Getenv("PROTOMCP_REDIS_SERVER"); v != "" {
		name = v // valkey-server, say
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not installed, and CI is set: .ci/run must install it (apt-get install redis-server): %v", err)
		}
		t.Log("###########################################################################")
		t.Log("### SKIPPING the replica-set tests: no redis-server binary on this machine.")
		t.Log("### Install it (apt-get install redis-server) to run them; CI always does.")
		t.Log("###########################################################################")
		t.Skip("no redis-server binary")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &redisServer{t: t, bin: bin, port: port, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, io.Discard
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(r.cmd, r.done)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port)})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			r.t.Fatal("redis-server did not answer PING within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
}

// replica is one replica process.
type replica struct {
	id   string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func startReplica(t *testing.T, redisURL string) *replica {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROTOMCP_REPLICA_REDIS="+redisURL)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rep := &replica{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() { _ = cmd.Wait(); close(rep.done) }()
	select {
	case line, ok := <-lines:
		f := strings.Fields(line)
		if !ok || len(f) != 3 || f[0] != "listening" {
			t.Fatalf("replica did not start: %q", line)
		}
		rep.addr, rep.id = f[1], f[2]
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("replica did not start within 20s")
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-rep.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-rep.done
		}
	})
	return rep
}

func (rep *replica) goroutines(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://" + rep.addr + "/goroutines")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hit is one request the proxy forwarded.
type hit struct {
	backend int
	method  string // HTTP method
	rpc     string // the JSON-RPC method of a POST, "response" for a client's response
	session string
	last    string // Last-Event-ID
}

// proxy is a round-robin reverse proxy over the live replicas, as a load balancer without
// sticky sessions; it records where each request went.
type proxy struct {
	*httptest.Server
	mu       sync.Mutex
	backends []*url.URL
	dead     map[int]bool
	next     int
	hits     []hit
}

func newProxy(t *testing.T, reps []*replica) *proxy {
	p := &proxy{dead: map[int]bool{}}
	for _, r := range reps {
		p.backends = append(p.backends, &url.URL{Scheme: "http", Host: r.addr, Path: "/mcp"})
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i, _ := strconv.Atoi(pr.In.Header.Get("X-Test-Backend"))
			pr.Out.Header.Del("X-Test-Backend")
			pr.SetURL(p.backends[i])
			pr.Out.URL.Path = p.backends[i].Path
			pr.Out.Host = pr.In.Host
		},
		FlushInterval: -1,
		ErrorLog:      nil,
	}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := hit{method: r.Method, session: r.Header.Get("Mcp-Session-Id"), last: r.Header.Get("Last-Event-ID")}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &m)
			h.rpc = m.Method
			if h.rpc == "" {
				h.rpc = "response"
			}
		}
		p.mu.Lock()
		for p.dead[p.next%len(p.backends)] {
			p.next++
		}
		h.backend = p.next % len(p.backends)
		p.next++
		p.hits = append(p.hits, h)
		p.mu.Unlock()
		r.Header.Set("X-Test-Backend", strconv.Itoa(h.backend))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *proxy) kill(i int) {
	p.mu.Lock()
	p.dead[i] = true
	p.mu.Unlock()
}

// find returns the hits matching f.
func (p *proxy) find(f func(hit) bool) []hit {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []hit
	for _, h := range p.hits {
		if f(h) {
			out = append(out, h)
		}
	}
	return out
}

func textOf(t *testing.T, res *runtime.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("unexpected result %+v", res)
	}
	return res.Content[0].Text
}

// waitFor polls cond every 20ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReplicaSet runs three replicas sharing one redis-server behind a round-robin proxy,
// and a client that sees one server: its session serves on every replica, a stream survives
// the SIGKILL of its replica, notifications and a server request cross replicas, and a Redis
// outage gives clear errors and leaves nothing behind.
func TestReplicaSet(t *testing.T) {
	// Registered first, so run last: after the replicas, the proxy and Redis have stopped.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, before)
	})
	rs := startRedis(t)
	reps := []*replica{startReplica(t, rs.url()), startReplica(t, rs.url()), startReplica(t, rs.url())}
	px := newProxy(t, reps)
	endpoint := px.URL + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	index := func(id string) int {
		for i, r := range reps {
			if r.id == id {
				return i
			}
		}
		t.Fatalf("unknown replica %q", id)
		return -1
	}

	t.Run("SessionAcrossReplicas", func(t *testing.T) {
		c := runtime.NewClient(endpoint, legacy)
		defer c.Close(context.Background())
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for range 6 {
			res, err := c.CallTool(ctx, "whoami", nil)
			if err != nil {
				t.Fatal(err)
			}
			seen[textOf(t, res)] = true
		}
		if len(seen) != 3 {
			t.Fatalf("the session's calls were served by %d replicas, want all 3: %v", len(seen), seen)
		}
		// A log level set through one replica holds on the others: the stored session has it.
		if err := c.SetLogLevel(ctx, runtime.LevelDebug); err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port)})
		defer rdb.Close()
		st, err := redismcp.New(rdb, redismcp.Options{}).Load(ctx, c.SessionID())
		if err != nil || st.LogLevel != runtime.LevelDebug || st.ClientInfo.Name == "" {
			t.Fatalf("stored session = %+v, %v; want log level debug and the client's info", st, err)
		}
	})

	t.Run("NotificationsReachTheGETStreamsReplica", func(t *testing.T) {
		notes := make(chan string, 16)
		c := runtime.NewClient(endpoint, legacy, runtime.WithStandaloneStream(), runtime.WithNotificationHandler(func(_ context.Context, method string, params json.RawMessage) {
			notes <- method + " " + string(params)
		}))
		defer c.Close(context.Background())
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(ctx, "resources/subscribe", map[string]string{"uri": "res://a"}); err != nil {
			t.Fatal(err)
		}
		var gets []hit
		waitFor(t, 5*time.Second, "the client's GET stream", func() bool {
			gets = px.find(func(h hit) bool { return h.method == http.MethodGet && h.session == c.SessionID() })
			return len(gets) > 0
		})
		holder := gets[len(gets)-1].backend
		other := (holder + 1) % 3
		// Another client, straight to another replica, triggers the notifications there.
		trigger := runtime.NewClient("http://"+reps[other].addr+"/mcp", legacy)
		defer trigger.Close(context.Background())
		expect := func(tool, want string) {
			t.Helper()
			if _, err := trigger.CallTool(ctx, tool, nil); err != nil {
				t.Fatal(err)
			}
			timeout := time.After(10 * time.Second)
			for {
				select {
				case n := <-notes:
					if strings.HasPrefix(n, want) {
						return
					}
				case <-timeout:
					t.Fatalf("no %s reached the client whose GET stream is on replica %d (triggered on %d)", want, holder, other)
				}
			}
		}
		expect("change_tools", "notifications/tools/list_changed")
		expect("update_resource", `notifications/resources/updated {"uri":"res://a"}`)
	})

	t.Run("SamplingAnsweredThroughAnotherReplica", func(t *testing.T) {
		c := runtime.NewClient(endpoint, legacy, runtime.WithSamplingHandler(func(context.Context, *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
			return &runtime.CreateMessageResult{Role: "assistant", Content: runtime.TextContent("sampled"), Model: "test"}, nil
		}))
		defer c.Close(context.Background())
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := c.CallTool(ctx, "sample", nil)
		if err != nil {
			t.Fatal(err)
		}
		replicaID, answer, _ := strings.Cut(textOf(t, res), ":")
		if answer != "sampled" {
			t.Fatalf("answer = %q", answer)
		}
		calls := px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == "tools/call" })
		responses := px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == "response" })
		if len(calls) != 1 || len(responses) != 1 {
			t.Fatalf("calls %v, responses %v", calls, responses)
		}
		if calls[0].backend != index(replicaID) || responses[0].backend == calls[0].backend {
			t.Fatalf("tools/call on replica %d (handler on %d), its sampling response on %d: want the response on another replica", calls[0].backend, index(replicaID), responses[0].backend)
		}
	})

	t.Run("StreamSurvivesSIGKILL", func(t *testing.T) {
		c := runtime.NewClient(endpoint, legacy, runtime.WithMaxResumes(50))
		defer c.Close(context.Background())
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		var (
			mu       sync.Mutex
			progress []float64
		)
		got3 := make(chan struct{})
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rs.port)})
		defer rdb.Close()
		type result struct {
			res *runtime.CallToolResult
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := c.CallTool(ctx, "slow", nil, runtime.WithProgress(func(p *runtime.ProgressParams) {
				mu.Lock()
				progress = append(progress, p.Progress)
				if len(progress) == 3 {
					close(got3)
				}
				mu.Unlock()
			}))
			done <- result{res, err}
		}()
		select {
		case <-got3:
		case r := <-done:
			t.Fatalf("the call ended early: %+v, %v", r.res, r.err)
		case <-ctx.Done():
			t.Fatal("no progress")
		}
		// All five events are in Redis before the kill, whether or not the client has them.
		var key string
		waitFor(t, 5*time.Second, "five stored events", func() bool {
			keys, _ := rdb.Keys(ctx, "mcp:e:"+c.SessionID()+":*").Result()
			for _, k := range keys {
				if n, _ := rdb.XLen(ctx, k).Result(); n == 5 {
					key = k
					return true
				}
			}
			return false
		})
		calls := px.find(func(h hit) bool { return h.session == c.SessionID() && h.rpc == "tools/call" })
		if len(calls) != 1 {
			t.Fatalf("calls %v", calls)
		}
		victim := calls[0].backend
		px.kill(victim)
		if err := reps[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-reps[victim].done
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			t.Fatal("the call never got an outcome after its replica was killed")
		}
		var rpcErr *runtime.Error
		if !errors.As(r.err, &rpcErr) || !strings.Contains(rpcErr.Message, "stopped before answering") {
			t.Fatalf("call = %+v, %v; want the JSON-RPC error saying its replica stopped", r.res, r.err)
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(progress) != "[1 2 3 4 5]" {
			t.Fatalf("progress = %v; want every stored event exactly once: [1 2 3 4 5]", progress)
		}
		resumes := px.find(func(h hit) bool { return h.session == c.SessionID() && h.method == http.MethodGet && h.last != "" })
		if len(resumes) == 0 || resumes[len(resumes)-1].backend == victim {
			t.Fatalf("resumptions %v: want one on a live replica", resumes)
		}
		if n, _ := rdb.XLen(ctx, key).Result(); n != 6 {
			t.Fatalf("the stream holds %d events; want the five and the stored outcome", n)
		}
	})

	t.Run("RedisOutage", func(t *testing.T) {
		var live []*replica
		for _, r := range reps {
			select {
			case <-r.done:
			default:
				live = append(live, r)
			}
		}
		c := runtime.NewClient(endpoint, legacy)
		defer c.Close(context.Background())
		if err := c.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			if _, err := c.CallTool(ctx, "whoami", nil); err != nil {
				t.Fatal(err)
			}
		}
		before := make([]int, len(live))
		for i, r := range live {
			before[i] = r.goroutines(t)
		}
		rs.stop()
		for range 2 * len(live) {
			_, err := c.CallTool(ctx, "whoami", nil)
			var he *runtime.HTTPError
			if !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable || he.RPC == nil || !strings.Contains(he.RPC.Message, "session store is unavailable") {
				t.Fatalf("call with Redis down: %v; want 503 with a JSON-RPC error about the session store", err)
			}
		}
		if err := runtime.NewClient(endpoint, legacy).Connect(ctx); err == nil {
			t.Fatal("initialize succeeded with Redis down")
		}
		// The 2026-07-28 era shares nothing: it keeps working.
		modern := runtime.NewClient(endpoint)
		for range len(live) {
			if _, err := modern.CallTool(ctx, "whoami", nil); err != nil {
				t.Fatalf("2026-07-28 call with Redis down: %v", err)
			}
		}
		modern.Close(context.Background())
		rs.start()
		// Redis came back empty (no persistence): a new session works on every replica.
		c2 := runtime.NewClient(endpoint, legacy)
		defer c2.Close(context.Background())
		waitFor(t, 20*time.Second, "a session once Redis is back", func() bool { return c2.Connect(ctx) == nil })
		seen := map[string]bool{}
		for range 2 * len(live) {
			res, err := c2.CallTool(ctx, "whoami", nil)
			if err != nil {
				t.Fatal(err)
			}
			seen[textOf(t, res)] = true
		}
		if len(seen) != len(live) {
			t.Fatalf("served by %v; want all %d live replicas", seen, len(live))
		}
		// The old session went with Redis's data: 404, on which the client starts a new
		// session and sends the call again.
		old := c.SessionID()
		if _, err := c.CallTool(ctx, "whoami", nil); err != nil {
			t.Fatalf("call on a session Redis lost: %v; want it sent again on a new session", err)
		}
		if c.SessionID() == old || c.SessionID() == "" {
			t.Fatalf("session %q after Redis lost %q; want a new one", c.SessionID(), old)
		}
		// The bus resubscribed: a notification still crosses replicas.
		notes := make(chan string, 16)
		c3 := runtime.NewClient(endpoint, legacy, runtime.WithStandaloneStream(), runtime.WithNotificationHandler(func(_ context.Context, method string, _ json.RawMessage) {
			notes <- method
		}))
		defer c3.Close(context.Background())
		if err := c3.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		var gets []hit
		waitFor(t, 5*time.Second, "the GET stream", func() bool {
			gets = px.find(func(h hit) bool { return h.method == http.MethodGet && h.session == c3.SessionID() })
			return len(gets) > 0
		})
		var other *replica
		for i, r := range live {
			if index(r.id) != gets[len(gets)-1].backend {
				other = live[i]
				break
			}
		}
		trigger := runtime.NewClient("http://"+other.addr+"/mcp", legacy)
		defer trigger.Close(context.Background())
		received := false
		// Pub/Sub drops what precedes a resubscription: trigger until one arrives.
		waitFor(t, 15*time.Second, "list_changed across replicas after the outage", func() bool {
			if _, err := trigger.CallTool(ctx, "change_tools", nil); err != nil {
				t.Fatal(err)
			}
			select {
			case <-notes:
				received = true
			case <-time.After(500 * time.Millisecond):
			}
			return received
		})
		c3.Close(context.Background())
		trigger.Close(context.Background())
		for i, r := range live {
			waitFor(t, 15*time.Second, "replica goroutines back to their level before the outage", func() bool {
				return r.goroutines(t) <= before[i]+2
			})
		}
	})
}
