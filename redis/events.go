package redismcp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

func (s *Store) streamKey(session, stream string) string {
	return s.opts.Prefix + "e:" + session + ":" + stream
}
func (s *Store) metaKey(session, stream string) string {
	return s.opts.Prefix + "em:" + session + ":" + stream
}
func (s *Store) indexKey(session string) string { return s.opts.Prefix + "es:" + session }

// entryID is the Redis Stream entry ID of event seq: explicit, so that XADD refuses an event
// a stream already has (another replica wrote first) and XRANGE resumes after any seq.
func entryID(seq uint64) string { return "0-" + strconv.FormatUint(seq, 10) }

// Append implements runtime.EventStore: XADD with the event's own ID, the stream trimmed to
// about MaxStreamEvents, its lifetime extended, and the stream recorded in its session's
// index (for DeleteSession). It returns runtime.ErrEventConflict when the stream already holds
// seq or a later event.
func (s *Store) Append(ctx context.Context, session, stream string, seq uint64, data []byte) error {
	key, index := s.streamKey(session, stream), s.indexKey(session)
	var add *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: s.opts.MaxStreamEvents, Approx: true, ID: entryID(seq), Values: []any{"d", data}})
		p.PExpire(ctx, key, s.opts.EventTTL)
		p.SAdd(ctx, index, stream)
		p.PExpire(ctx, index, s.opts.EventTTL)
		return nil
	})
	if aerr := add.Err(); aerr != nil && strings.Contains(aerr.Error(), errConflictRe) {
		return runtime.ErrEventConflict
	}
	return wrap("append event", ctxErr(ctx, err))
}

// replayBatch is how many events Replay reads per XRANGE.
const replayBatch = 100

// Replay implements runtime.EventStore: XRANGE after the given event, in batches. It returns
// runtime.ErrEventsEvicted when events after it were trimmed (the next stored event is not the
// next one), rather than skip them silently.
func (s *Store) Replay(ctx context.Context, session, stream string, after uint64, fn func(uint64, []byte) error) error {
	key := s.streamKey(session, stream)
	for {
		entries, err := s.rdb.XRangeN(ctx, key, "("+entryID(after), "+", replayBatch).Result()
		if err != nil {
			return wrap("replay events", ctxErr(ctx, err))
		}
		for _, e := range entries {
			seq, err := parseSeq(e.ID)
			if err != nil {
				return err
			}
			if seq != after+1 {
				return runtime.ErrEventsEvicted
			}
			d, _ := e.Values["d"].(string)
			if err := fn(seq, []byte(d)); err != nil {
				return err
			}
			after = seq
		}
		if len(entries) < replayBatch {
			return nil
		}
	}
}

// DeleteStream implements runtime.EventStore.
func (s *Store) DeleteStream(ctx context.Context, session, stream string) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.streamKey(session, stream), s.metaKey(session, stream))
		p.SRem(ctx, s.indexKey(session), stream)
		return nil
	})
	return wrap("delete stream", ctxErr(ctx, err))
}

// DeleteSession implements runtime.EventStore.
func (s *Store) DeleteSession(ctx context.Context, session string) error {
	index := s.indexKey(session)
	streams, err := s.rdb.SMembers(ctx, index).Result()
	if err != nil {
		return wrap("delete session events", ctxErr(ctx, err))
	}
	keys := []string{index}
	for _, st := range streams {
		keys = append(keys, s.streamKey(session, st), s.metaKey(session, st))
	}
	return wrap("delete session events", ctxErr(ctx, s.rdb.Del(ctx, keys...).Err()))
}

// OpenStream implements runtime.SharedEventStore.
func (s *Store) OpenStream(ctx context.Context, session, stream string, requestID json.RawMessage) error {
	return wrap("open stream", ctxErr(ctx, s.rdb.Set(ctx, s.metaKey(session, stream), []byte(requestID), s.opts.EventTTL).Err()))
}

// StreamInfo implements runtime.SharedEventStore.
func (s *Store) StreamInfo(ctx context.Context, session, stream string) (runtime.StreamInfo, error) {
	var (
		get  *redis.StringCmd
		last *redis.XMessageSliceCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, s.metaKey(session, stream))
		last = p.XRevRangeN(ctx, s.streamKey(session, stream), "+", "-", 1)
		return nil
	})
	if isNil(get.Err()) {
		return runtime.StreamInfo{}, runtime.ErrSessionNotFound
	}
	if err != nil {
		return runtime.StreamInfo{}, wrap("stream info", ctxErr(ctx, err))
	}
	info := runtime.StreamInfo{RequestID: json.RawMessage(get.Val())}
	if l := last.Val(); len(l) > 0 {
		if info.LastSeq, err = parseSeq(l[0].ID); err != nil {
			return runtime.StreamInfo{}, err
		}
	}
	return info, nil
}

// waitBlock is how long Wait blocks in Redis at most.
const waitBlock = time.Second

// Wait implements runtime.SharedEventStore: XREAD BLOCK.
func (s *Store) Wait(ctx context.Context, session, stream string, after uint64) error {
	err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{s.streamKey(session, stream), entryID(after)}, Count: 1, Block: waitBlock}).Err()
	if err == nil || isNil(err) {
		return nil
	}
	return wrap("wait for events", ctxErr(ctx, err))
}
