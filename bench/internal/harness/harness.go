// Package harness runs timed calls and reports what the benchmark tables show: latency
// percentiles, throughput, errors, hangs and the TCP connections dialled after warm-up.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Result is the outcome of one measurement. Latencies are in microseconds.
type Result struct {
	Name      string  `json:"name"`
	Callers   int     `json:"callers"`
	Calls     int     `json:"calls"`
	Errors    int     `json:"errors"`
	Hangs     int     `json:"hangs"`
	WarmDials int64   `json:"warm_dials"` // connections dialled during setup and warm-up
	NewDials  int64   `json:"new_dials"`  // connections dialled after warm-up
	P50       float64 `json:"p50_us"`
	P90       float64 `json:"p90_us"`
	P99       float64 `json:"p99_us"`
	PerSec    float64 `json:"calls_per_s"`
	// CPUPerCall is the client process's own CPU time (user and system, all goroutines) per
	// measured call, in microseconds: what the measurement cost the client, so that ratios
	// can be read as the server's share.
	CPUPerCall float64 `json:"client_cpu_us_per_call"`
	FirstErr   string  `json:"first_error,omitempty"`
}

// cpuTime returns the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Dialer counts the TCP connections it opens.
type Dialer struct {
	n atomic.Int64
	d net.Dialer
}

// Count returns how many connections were dialled so far.
func (d *Dialer) Count() int64 { return d.n.Load() }

// DialContext dials and counts.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.n.Add(1)
	return d.d.DialContext(ctx, network, addr)
}

// HTTPClient returns an http.Client on a fresh keep-alive transport, sized for callers
// concurrent calls, that dials through d. It has no Timeout: calls are bounded by contexts.
func (d *Dialer) HTTPClient(callers int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConns:        2*callers + 16,
		MaxIdleConnsPerHost: 2*callers + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// Options say how long and how hard to call.
type Options struct {
	Callers  int           // concurrent callers (1: sequential)
	Warmup   int           // calls per caller before the clock starts
	Duration time.Duration // how long to measure, unless Count is set
	Count    int           // calls per caller to measure (overrides Duration)
	Timeout  time.Duration // a call still running after this is a hang
}

// Call makes one call for caller w; it is called from w's goroutine only.
type Call func(ctx context.Context, w int) error

// Run warms up, then measures calls. dials counts the client's connections.
func Run(name string, o Options, dials *Dialer, call Call) Result {
	if o.Callers < 1 {
		o.Callers = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	res := Result{Name: name, Callers: o.Callers}
	var (
		warm, start sync.WaitGroup
		mu          sync.Mutex
		all         []time.Duration
		errs, hangs int
		firstErr    error
	)
	one := func(w int) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
		defer cancel()
		t0 := time.Now()
		err := call(ctx, w)
		d := time.Since(t0)
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
			err = errHang
		}
		return d, err
	}
	gate := make(chan struct{})
	var deadline time.Time
	warm.Add(o.Callers)
	start.Add(o.Callers)
	for w := range o.Callers {
		go func() {
			defer start.Done()
			for range o.Warmup {
				_, _ = one(w)
			}
			warm.Done()
			<-gate
			lat := make([]time.Duration, 0, 4096)
			var e, h int
			var fe error
			for i := 0; ; i++ {
				if o.Count > 0 {
					if i >= o.Count {
						break
					}
				} else if time.Now().After(deadline) {
					break
				}
				d, err := one(w)
				switch {
				case errors.Is(err, errHang):
					h++
				case err != nil:
					e++
					if fe == nil {
						fe = err
					}
				default:
					lat = append(lat, d)
				}
			}
			mu.Lock()
			all = append(all, lat...)
			errs += e
			hangs += h
			if firstErr == nil {
				firstErr = fe
			}
			mu.Unlock()
		}()
	}
	warm.Wait()
	res.WarmDials = dials.Count()
	t0, cpu0 := time.Now(), cpuTime()
	deadline = t0.Add(o.Duration)
	close(gate)
	start.Wait()
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	res.NewDials = dials.Count() - res.WarmDials
	res.Calls, res.Errors, res.Hangs = len(all), errs, hangs
	if firstErr != nil {
		res.FirstErr = firstErr.Error()
	}
	slices.Sort(all)
	res.P50, res.P90, res.P99 = pct(all, 0.50), pct(all, 0.90), pct(all, 0.99)
	res.PerSec = float64(len(all)) / elapsed.Seconds()
	if n := len(all) + errs + hangs; n > 0 {
		res.CPUPerCall = float64(cpu.Nanoseconds()) / 1e3 / float64(n)
	}
	return res
}

var errHang = errors.New("hang")

func pct(s []time.Duration, p float64) float64 {
	if len(s) == 0 {
		return 0
	}
	i := int(p * float64(len(s)-1))
	return float64(s[i].Nanoseconds()) / 1e3
}

// Print writes r as one JSON line on stdout (what the orchestrator reads), and a readable
// summary on stderr.
func Print(r Result) {
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	fmt.Fprintf(os.Stderr, "%s: callers=%d calls=%d p50=%.1fµs p90=%.1fµs p99=%.1fµs %.0f calls/s errors=%d hangs=%d new dials=%d (warm-up %d) client CPU %.1fµs/call\n",
		r.Name, r.Callers, r.Calls, r.P50, r.P90, r.P99, r.PerSec, r.Errors, r.Hangs, r.NewDials, r.WarmDials, r.CPUPerCall)
	if r.FirstErr != "" {
		fmt.Fprintf(os.Stderr, "  first error: %s\n", r.FirstErr)
	}
}
