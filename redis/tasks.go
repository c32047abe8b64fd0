package redismcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

// TaskStore keeps a server's tasks in Redis (runtime.TaskStore), so that every replica of a
// replica set answers tasks/get, tasks/result, tasks/list and tasks/cancel for the tasks any
// of them runs. Store.Tasks returns it; Store.ServerOptions installs it.
//
// In Redis:
//   - a task is a string (<prefix>t:<id>) holding its record as JSON, expiring with the
//     task's TTL (kept until deleted when it has none);
//   - <prefix>to:<owner> is a sorted set of its owner's task IDs by creation time, for
//     tasks/list and the per-caller cap, expiring with the owner's last task;
//   - <prefix>tall is a sorted set of every task ID by expiry time, for the total cap.
//
// Updates are optimistic (WATCH, MULTI), retried when another replica wrote first. The
// runtime's byte budget of tasks (TaskLimits.Bytes) is not counted here: Redis's own
// maxmemory bounds what it holds, and runtime.WithMaxTaskResultBytes bounds each result.
type TaskStore struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ runtime.TaskStore = (*TaskStore)(nil)

// Tasks returns the TaskStore on the Store's Redis.
func (s *Store) Tasks() *TaskStore { return &TaskStore{rdb: s.rdb, prefix: s.opts.Prefix} }

func (ts *TaskStore) taskKey(id string) string     { return ts.prefix + "t:" + id }
func (ts *TaskStore) ownerKey(owner string) string { return ts.prefix + "to:" + owner }
func (ts *TaskStore) allKey() string               { return ts.prefix + "tall" }

// createTaskScript stores a new task unless a cap is reached: it forgets the expired IDs of
// the total index, counts the owner's live tasks (dropping the IDs of expired ones from the
// owner's index; without a per-owner cap, as for anonymous callers, it checks the index's
// eight oldest IDs only), and sets the record with its TTL. The owner's index expires with
// the last of its tasks, so that the index of an owner that is gone (a session that ended)
// does not outlive its tasks.
// KEYS: record, owner index, total index. ARGV: record JSON, created ms, expiry ms (0: none),
// TTL ms (0: none), per-owner cap, total cap (0: none), now ms, task key prefix, id.
var createTaskScript = redis.NewScript(`
local now = tonumber(ARGV[7])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local total = tonumber(ARGV[6])
if total > 0 and redis.call('ZCARD', KEYS[3]) >= total then return -1 end
local per = tonumber(ARGV[5])
if per > 0 then
  local n = 0
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    if redis.call('EXISTS', ARGV[8] .. id) == 1 then n = n + 1 else redis.call('ZREM', KEYS[2], id) end
  end
  if n >= per then return -2 end
end
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
if per <= 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, 7)) do
    if redis.call('EXISTS', ARGV[8] .. id) == 0 then redis.call('ZREM', KEYS[2], id) end
  end
end
local existed = redis.call('EXISTS', KEYS[2]) == 1
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[9])
else
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[3], '+inf', ARGV[9])
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[9])
if ttl <= 0 then
  redis.call('PERSIST', KEYS[2])
else
  local left = redis.call('PTTL', KEYS[2])
  if not existed or (left >= 0 and left < ttl) then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return 1
`)

// Create implements runtime.TaskStore.
func (ts *TaskStore) Create(ctx context.Context, rec *runtime.TaskRecord, limits runtime.TaskLimits) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	var expiry, ttl int64
	if rec.TTL > 0 {
		ttl = max(rec.TTL.Milliseconds(), 1)
		expiry = rec.CreatedAt.Add(rec.TTL).UnixMilli()
	}
	n, err := createTaskScript.Run(ctx, ts.rdb, []string{ts.taskKey(rec.ID), ts.ownerKey(rec.Owner), ts.allKey()},
		b, rec.CreatedAt.UnixMilli(), expiry, ttl, limits.PerOwner, limits.Total, time.Now().UnixMilli(), ts.prefix+"t:", rec.ID).Int()
	if err != nil {
		return wrap("create task", ctxErr(ctx, err))
	}
	switch n {
	case -1:
		return fmt.Errorf("%w: the server holds %d tasks, its limit", runtime.ErrTaskLimit, limits.Total)
	case -2:
		return fmt.Errorf("%w: this caller holds %d tasks, the most one caller may hold", runtime.ErrTaskLimit, limits.PerOwner)
	case -3:
		return fmt.Errorf("redismcp: task %q already exists", rec.ID)
	}
	return nil
}

// Get implements runtime.TaskStore.
func (ts *TaskStore) Get(ctx context.Context, id string) (*runtime.TaskRecord, error) {
	b, err := ts.rdb.Get(ctx, ts.taskKey(id)).Bytes()
	if isNil(err) {
		return nil, runtime.ErrTaskNotFound
	}
	if err != nil {
		return nil, wrap("get task", ctxErr(ctx, err))
	}
	return decodeTask(b)
}

func decodeTask(b []byte) (*runtime.TaskRecord, error) {
	var rec runtime.TaskRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, wrap("decode task", err)
	}
	if rec.TTL > 0 && time.Now().After(rec.CreatedAt.Add(rec.TTL)) {
		return nil, runtime.ErrTaskNotFound
	}
	return &rec, nil
}

// maxTaskRetries bounds the optimistic retries of an Update that other replicas keep racing.
const maxTaskRetries = 20

// Update implements runtime.TaskStore: WATCH the record, apply fn, write it back (keeping its
// TTL) in MULTI; again when another writer came first.
func (ts *TaskStore) Update(ctx context.Context, id string, fn func(*runtime.TaskRecord) error) (*runtime.TaskRecord, error) {
	key := ts.taskKey(id)
	var out *runtime.TaskRecord
	txf := func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if isNil(err) {
			return runtime.ErrTaskNotFound
		}
		if err != nil {
			return err
		}
		rec, err := decodeTask(b)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
		nb, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, key, nb, redis.SetArgs{KeepTTL: true, Mode: "XX"})
			return nil
		})
		if err == nil {
			out = rec
		}
		return err
	}
	for range maxTaskRetries {
		err := ts.rdb.Watch(ctx, txf, key)
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, redis.TxFailedErr):
			continue // another replica wrote first
		case errors.Is(err, runtime.ErrTaskNotFound):
			return nil, err
		case ctx.Err() == nil && !isRedisError(err):
			return nil, err // fn's own error
		default:
			return nil, wrap("update task", ctxErr(ctx, err))
		}
	}
	return nil, fmt.Errorf("redismcp: update of task %q kept conflicting with other writers", id)
}

// isRedisError reports whether err came from Redis or the connection to it, rather than
// from an Update's fn.
func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) || errors.Is(err, redis.ErrClosed) || errors.Is(err, context.DeadlineExceeded)
}

// List implements runtime.TaskStore: the owner's index in creation order, after the task
// after, the records fetched with MGET (the IDs of expired ones are dropped from the index).
func (ts *TaskStore) List(ctx context.Context, owner, after string, limit int) ([]*runtime.TaskRecord, bool, error) {
	okey := ts.ownerKey(owner)
	start := int64(0)
	if after != "" {
		r, err := ts.rdb.ZRank(ctx, okey, after).Result()
		switch {
		case isNil(err):
			return nil, false, nil // the cursor's task expired: nothing after it can be placed
		case err != nil:
			return nil, false, wrap("list tasks", ctxErr(ctx, err))
		}
		start = r + 1
	}
	stop := int64(-1)
	if limit > 0 {
		stop = start + int64(limit) // one more than the page, to tell whether more follow
	}
	ids, err := ts.rdb.ZRange(ctx, okey, start, stop).Result()
	if err != nil {
		return nil, false, wrap("list tasks", ctxErr(ctx, err))
	}
	if len(ids) == 0 {
		return nil, false, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = ts.taskKey(id)
	}
	vals, err := ts.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, false, wrap("list tasks", ctxErr(ctx, err))
	}
	var recs []*runtime.TaskRecord
	var gone []any
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		rec, err := decodeTask([]byte(s))
		if err != nil {
			gone = append(gone, ids[i])
			continue
		}
		recs = append(recs, rec)
	}
	if len(gone) > 0 {
		_ = ts.rdb.ZRem(ctx, okey, gone...).Err()
	}
	more := limit > 0 && len(recs) > limit
	if more {
		recs = recs[:limit]
	}
	return recs, more, nil
}

// Delete implements runtime.TaskStore.
func (ts *TaskStore) Delete(ctx context.Context, id string) error {
	rec, err := ts.Get(ctx, id)
	if errors.Is(err, runtime.ErrTaskNotFound) {
		return wrap("delete task", ctxErr(ctx, ts.rdb.ZRem(ctx, ts.allKey(), id).Err()))
	}
	if err != nil {
		return err
	}
	_, err = ts.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, ts.taskKey(id))
		p.ZRem(ctx, ts.ownerKey(rec.Owner), id)
		p.ZRem(ctx, ts.allKey(), id)
		return nil
	})
	return wrap("delete task", ctxErr(ctx, err))
}
