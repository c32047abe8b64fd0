// Package workers runs request handlers on goroutines that outlive a single request. A fresh
// goroutine
// starts with a small stack and grows it, copying, as JSON decoding and the handler go deep; a
// profile of an echo call put that at a sixth of the server's CPU. An idle worker keeps its
// grown stack for the next request. RunJob never waits: with no idle worker it starts a new one,
// so no request ever queues behind another. Idle workers exit after IdleTimeout, and all of
// them at Stop.
package workers

import (
	"sync"
	"time"
)

// Pool is a set of workers. Its zero value is ready, with IdleTimeout to be set first.
type Pool struct {
	// IdleTimeout is how long an idle worker waits for a job before it exits.
	IdleTimeout time.Duration

	mu      sync.Mutex
	idle    []chan Job // each idle worker's mailbox (capacity 1)
	stopped bool
}

// Job is what a worker runs. A request's job is its own state, so that handing it over costs
// no closure.
type Job interface{ Run() }

// JobFunc is a function as a Job.
type JobFunc func()

// Run calls f.
func (f JobFunc) Run() { f() }

// Run runs f on an idle worker, or on a new one. It never waits.
func (p *Pool) Run(f func()) { p.RunJob(JobFunc(f)) }

// RunJob runs f on an idle worker, or on a new one. It never waits.
func (p *Pool) RunJob(f Job) {
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

func (p *Pool) work(f Job) {
	mb := make(chan Job, 1)
	t := time.NewTimer(p.IdleTimeout)
	defer t.Stop()
	for f != nil {
		f.Run()
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, mb)
		p.mu.Unlock()
		t.Reset(p.IdleTimeout)
		select {
		case f = <-mb:
		case <-t.C:
			if !p.leave(mb) {
				// Taken off the idle list by RunJob just now: a job is on its way.
				f = <-mb
			} else {
				f = nil
			}
		}
	}
}

// leave removes an idle worker's mailbox from the list; false if RunJob already took it.
func (p *Pool) leave(mb chan Job) bool {
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

// Stop makes idle workers exit now and busy ones when they finish.
func (p *Pool) Stop() {
	p.mu.Lock()
	p.stopped = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, mb := range idle {
		close(mb)
	}
}
