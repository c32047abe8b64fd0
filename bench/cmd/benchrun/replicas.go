package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"
)

// The replica-set rows: protomcp servers sharing their 2025-11-25 sessions, stream events and
// notifications through a redis-server of benchrun's own (the redis module), measured straight
// and through a round-robin reverse proxy (net/http/httputil, in benchrun's process, without
// sticky sessions), against one protomcp server on its own.

var flagReplicas = flag.Bool("replicas", true, "measure the replica-set rows (needs a redis-server binary)")

// replicaKeys are the replica servers, all on one Redis.
var replicaKeys = []string{"replica-1", "replica-2", "replica-3"}

// replicaSet is the Redis and the proxies of the replica rows, when they run.
var replicaSet struct {
	on                bool
	redis             *exec.Cmd
	proxy1, proxy3    string // URLs of the proxies over one replica and over three
	proxyServers      []*http.Server
	redisDir, redisAt string
}

// startRedis starts a redis-server on a free port without persistence and adds the replica
// servers; without a redis-server binary it says so and the rows are left out.
func startRedis(dir string) {
	if !*flagReplicas {
		return
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		logf("NO redis-server BINARY: the replica-set rows are left out (apt-get install redis-server)")
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	rdir, err := os.MkdirTemp(dir, "redis-")
	check(err)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", rdir)
	check(cmd.Start())
	replicaSet.redis = cmd
	replicaSet.redisAt = "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", replicaSet.redisAt, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			fatalf("redis-server did not listen within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	redisURL := "redis://" + replicaSet.redisAt + "/0"
	for i, k := range replicaKeys {
		servers = append(servers, &server{key: k, label: fmt.Sprintf("protomcp replica %d (JSON, Redis)", i+1), bin: "server-protomcp", args: []string{"-redis", redisURL}})
	}
	replicaSet.on = true
}

// startProxies starts the round-robin proxies, once the replicas listen.
func startProxies() {
	if !replicaSet.on {
		return
	}
	replicaSet.proxy1 = startProxy([]string{serverByKey("replica-1").url})
	var all []string
	for _, k := range replicaKeys {
		all = append(all, serverByKey(k).url)
	}
	replicaSet.proxy3 = startProxy(all)
}

// startProxy serves a round-robin reverse proxy over backends and returns its URL.
func startProxy(backends []string) string {
	var targets []*url.URL
	for _, b := range backends {
		u, err := url.Parse(b)
		check(err)
		targets = append(targets, u)
	}
	var next atomic.Uint64
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 1024 // 64 callers: keep the connections to the replicas
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := targets[(next.Add(1)-1)%uint64(len(targets))]
			pr.SetURL(t)
			pr.Out.URL.Path = t.Path
			pr.Out.Host = pr.In.Host
		},
		Transport:     transport,
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	hs := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	replicaSet.proxyServers = append(replicaSet.proxyServers, hs)
	return "http://" + ln.Addr().String() + "/mcp"
}

func stopReplicaSet() {
	for _, hs := range replicaSet.proxyServers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = hs.Shutdown(ctx)
		cancel()
	}
	if c := replicaSet.redis; c != nil && c.Process != nil {
		_ = c.Process.Signal(os.Interrupt)
		_ = c.Wait()
	}
}

func defineReplicaRows() {
	if !replicaSet.on {
		return
	}
	note := "; × floor column: × protomcp (JSON) on its own"
	sec := "replica set through Redis (2025-11-25 session), sequential echo, neutral client" + note
	add("repl-seq/direct", &row{section: sec, what: "p50 latency", pair: "load → 1 replica (Redis)", kind: "lat", floor: "seq/protomcp"})
	add("repl-seq/proxy1", &row{section: sec, what: "p50 latency", pair: "load → round-robin proxy → 1 replica (Redis)", kind: "lat", floor: "seq/protomcp"})
	add("repl-seq/proxy3", &row{section: sec, what: "p50 latency", pair: "load → round-robin proxy → 3 replicas (Redis)", kind: "lat", floor: "seq/protomcp"})
	sec = fmt.Sprintf("replica set through Redis (2025-11-25 session), %d concurrent callers, echo, neutral client", *flagC) + note
	add("repl-conc/direct", &row{section: sec, what: "calls/s", pair: "load → 1 replica (Redis)", kind: "tput", floor: "conc/protomcp"})
	add("repl-conc/proxy1", &row{section: sec, what: "calls/s", pair: "load → round-robin proxy → 1 replica (Redis)", kind: "tput", floor: "conc/protomcp"})
	add("repl-conc/proxy3", &row{section: sec, what: "calls/s", pair: "load → round-robin proxy → 3 replicas (Redis)", kind: "tput", floor: "conc/protomcp"})
}

// replicaRound measures the replica rows once.
func replicaRound(dir string, r int) {
	if !replicaSet.on {
		return
	}
	d := (*flagD).String()
	c := strconv.Itoa(*flagC)
	urls := map[string]string{"direct": serverByKey("replica-1").url, "proxy1": replicaSet.proxy1, "proxy3": replicaSet.proxy3}
	for _, k := range rotate([]string{"direct", "proxy1", "proxy3"}, r) {
		measure(dir, "repl-seq/"+k, "load", "-url", urls[k], "-d", d)
	}
	for _, k := range rotate([]string{"direct", "proxy1", "proxy3"}, r) {
		measure(dir, "repl-conc/"+k, "load", "-url", urls[k], "-d", d, "-c", c, "-warmup", "20")
	}
}
