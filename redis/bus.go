package redismcp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func (s *Store) channel(replica string) string {
	if replica == "" {
		return s.opts.Prefix + "bus"
	}
	return s.opts.Prefix + "bus:" + replica
}

func (s *Store) leaseKey(replica string) string { return s.opts.Prefix + "r:" + replica }

// Publish implements runtime.Bus: PUBLISH.
func (s *Store) Publish(ctx context.Context, to string, msg []byte) error {
	return wrap("publish", ctxErr(ctx, s.rdb.Publish(ctx, s.channel(to), msg).Err()))
}

// Alive implements runtime.Bus: whether the replica's lease key exists.
func (s *Store) Alive(ctx context.Context, replica string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.leaseKey(replica)).Result()
	if err != nil {
		return false, wrap("lease", ctxErr(ctx, err))
	}
	return n > 0, nil
}

// Listen implements runtime.Bus: SUBSCRIBE to the replica's channel and the common one, and
// a heartbeat renewing the replica's lease every third of Options.Lease. go-redis resubscribes
// by itself after a lost connection. The lease is released when ctx ends.
func (s *Store) Listen(ctx context.Context, replica string, fn func([]byte)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { s.heartbeat(ctx, replica) })

	ps := s.rdb.Subscribe(ctx, s.channel(""), s.channel(replica))
	defer ps.Close()
	ch := ps.Channel(redisChannelOptions...)
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			fn([]byte(m.Payload))
		}
	}
}

func (s *Store) heartbeat(ctx context.Context, replica string) {
	key := s.leaseKey(replica)
	every := s.opts.Lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		hctx, cancel := context.WithTimeout(ctx, every)
		if err := s.rdb.Set(hctx, key, "1", s.opts.Lease).Err(); err != nil && ctx.Err() == nil {
			slog.Debug("redismcp: lease renewal failed", "replica", replica, "error", err)
		}
		cancel()
		select {
		case <-t.C:
		case <-ctx.Done():
			// A replica that stops cleanly gives up its lease at once.
			dctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = s.rdb.Del(dctx, key).Err()
			cancel()
			return
		}
	}
}

// redisChannelOptions make the subscription notice a dead connection within seconds.
var redisChannelOptions = []redis.ChannelOption{redis.WithChannelHealthCheckInterval(time.Second)}
