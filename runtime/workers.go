package runtime

import (
	"sync"
	"time"
)

// workers runs request handlers on goroutines that outlive a single request. A fresh goroutine
// starts with a small stack and grows it, copying, as JSON decoding and the handler go deep; a
// profile of an echo call put that at a sixth of the server's CPU. An idle worker keeps its
// grown stack for the next request. run never waits: with no idle worker it starts a new one,
// so no request ever queues behind another. Idle workers exit after idleTimeout, and all of
// them at stop.
type workers struct {
	idleTimeout time.Duration

	mu      sync.Mutex
	idle    []chan job // each idle worker's mailbox (capacity 1)
	stopped bool
}

// job is what a worker runs. A request's job is its requestState, so that handing it over
// costs no closure.
type job interface{ run() }

// jobFunc is a function as a job.
type jobFunc func()

func (f jobFunc) run() { f() }

// run runs f on an idle worker, or on a new one.
func (p *workers) run(f func()) { p.runJob(jobFunc(f)) }

// runJob runs f on an idle worker, or on a new one.
func (p *workers) runJob(f job) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 && !p.stopped {
		mb := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		mb <- f // never blocks: the mailbox has room, and only we send to it
		return
	}
	p.mu.Unlock()
	go p.work(f)
}

func (p *workers) work(f job) {
	mb := make(chan job, 1)
	t := time.NewTimer(p.idleTimeout)
	defer t.Stop()
	for f != nil {
		f.run()
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, mb)
		p.mu.Unlock()
		t.Reset(p.idleTimeout)
		select {
		case f = <-mb:
		case <-t.C:
			if !p.leave(mb) {
				// Taken off the idle list by run just now: a job is on its way.
				f = <-mb
			} else {
				f = nil
			}
		}
	}
}

// leave removes an idle worker's mailbox from the list; false if run already took it.
func (p *workers) leave(mb chan job) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range p.idle {
		if m == mb {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return true
		}
	}
	return false
}

// stop makes idle workers exit now and busy ones when they finish.
func (p *workers) stop() {
	p.mu.Lock()
	p.stopped = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, mb := range idle {
		close(mb)
	}
}
