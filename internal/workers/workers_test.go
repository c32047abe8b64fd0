package workers

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The pool runs every job, concurrently when they overlap (no job waits for another), reuses
// idle workers, and lets them go after the idle timeout or at stop.
func TestWorkers(t *testing.T) {
	t.Parallel()
	p := &Pool{IdleTimeout: 50 * time.Millisecond}
	const n = 64
	var ran atomic.Int32
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		p.Run(func() {
			started.Done()
			<-release // every job blocks until all have started: they must run at once
			ran.Add(1)
			done.Done()
		})
	}
	waitDone(t, &started, "all jobs to start while the others block")
	close(release)
	waitDone(t, &done, "all jobs to finish")
	if ran.Load() != n {
		t.Fatalf("ran %d jobs, want %d", ran.Load(), n)
	}
	// Idle workers are reused: a second wave of sequential jobs starts no goroutine.
	p.mu.Lock()
	idle := len(p.idle)
	p.mu.Unlock()
	if idle == 0 {
		t.Fatal("no idle worker after the first wave")
	}
	// They leave after the idle timeout.
	if !waitFor(5*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		idle = len(p.idle)
		return idle == 0
	}) {
		t.Fatalf("%d idle workers still there long after the idle timeout", idle)
	}
	// stop releases idle workers at once, and jobs still run after it.
	q := &Pool{IdleTimeout: time.Hour}
	var wg sync.WaitGroup
	wg.Add(1)
	q.Run(wg.Done)
	waitDone(t, &wg, "a job")
	q.Stop()
	wg.Add(1)
	q.Run(wg.Done)
	waitDone(t, &wg, "a job after stop")
}

func waitDone(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	ch := make(chan struct{})
	go func() {
		wg.Wait()
		close(ch)
	}()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitFor polls cond every few milliseconds until it holds or d passes; it reports whether
// cond held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Every worker has exited by the end of the tests: Stop and the idle timeout let them go.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
