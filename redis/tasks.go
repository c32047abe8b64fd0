package redismcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
//   - <prefix>tall is a sorted set of every task ID by expiry time, for the total cap;
//   - <prefix>tsize is a hash of every task ID to the bytes its record is charged, and
//     <prefix>tbytes a hash whose field "used" is their sum and "limit" the byte budget
//     (TaskLimits.Bytes) of the last Create, for the byte budget.
//
// The byte budget is shared by every replica, as the other caps are: Create refuses with
// runtime.ErrTaskLimit a record that would take the charged bytes past TaskLimits.Bytes (0 or
// less: no budget), and an Update that grows a record past the budget of the last Create is
// refused the same way, as runtime.MemoryTaskStore does. A record is charged what the
// memory store charges it (fixed 256 bytes plus the lengths of its variable fields: IDs, tool,
// status message, result, error and input requests), so that a budget admits the same tasks
// whichever store holds them. Every change to the accounting is a Lua script, atomic with the
// change to the record; the records whose TTL ran out are dropped from it (and from Redis) by
// the next Create, or by an Update that would otherwise not fit, so the total counts live
// records only. A record Redis itself evicts (maxmemory with an allkeys policy) stays charged
// until its TTL runs out or it is deleted.
//
// Updates are optimistic (WATCH, then the write in MULTI), retried when another replica wrote
// first. runtime.WithMaxTaskResultBytes bounds each result.
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
func (ts *TaskStore) sizesKey() string             { return ts.prefix + "tsize" }
func (ts *TaskStore) bytesKey() string             { return ts.prefix + "tbytes" }

// pruneTasksLua defines prune(tall, sizes, bytes, now, prefix), which forgets every task
// whose expiry time (its score in the total index) is now or earlier: its record, its entry
// in the total index, and its charge against the byte budget. A record is deleted with its
// charge, even if Redis has not expired it yet (clocks differ by a few milliseconds), so that
// no record is ever live and uncharged.
const pruneTasksLua = `
local function prune(tall, sizes, bytes, now, prefix)
  local freed = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', tall, '-inf', now)) do
    freed = freed + (tonumber(redis.call('HGET', sizes, id)) or 0)
    redis.call('HDEL', sizes, id)
    redis.call('DEL', prefix .. id)
  end
  redis.call('ZREMRANGEBYSCORE', tall, '-inf', now)
  if freed > 0 then redis.call('HINCRBY', bytes, 'used', -freed) end
end
`

// createTaskScript stores a new task unless a cap is reached: it forgets the expired tasks
// of the total index (prune), counts the owner's live tasks (dropping the IDs of expired ones
// from the owner's index; without a per-owner cap, as for anonymous callers, it checks the
// index's eight oldest IDs only), and sets the record with its TTL. The owner's index expires with
// the last of its tasks, so that the index of an owner that is gone (a session that ended)
// does not outlive its tasks. The record is charged its size against the byte budget, which
// it is refused past; the budget given is kept as the one Update keeps to.
// KEYS: record, owner index, total index, sizes, bytes. ARGV: record JSON, created ms, expiry
// ms (0: none), TTL ms (0: none), per-owner cap, total cap (0: none), now ms, task key prefix,
// id, record size, byte budget (0 or less: none).
var createTaskScript = redis.NewScript(pruneTasksLua + `
local now = tonumber(ARGV[7])
prune(KEYS[3], KEYS[4], KEYS[5], now, ARGV[8])
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
redis.call('HSET', KEYS[5], 'limit', ARGV[11])
local budget = tonumber(ARGV[11])
if budget > 0 and (tonumber(redis.call('HGET', KEYS[5], 'used')) or 0) + tonumber(ARGV[10]) > budget then return -4 end
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
redis.call('HSET', KEYS[4], ARGV[9], ARGV[10])
redis.call('HINCRBY', KEYS[5], 'used', ARGV[10])
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
	keys := []string{ts.taskKey(rec.ID), ts.ownerKey(rec.Owner), ts.allKey(), ts.sizesKey(), ts.bytesKey()}
	n, err := createTaskScript.Run(ctx, ts.rdb, keys, b, rec.CreatedAt.UnixMilli(), expiry, ttl, limits.PerOwner, limits.Total,
		time.Now().UnixMilli(), ts.prefix+"t:", rec.ID, rec.Size(), limits.Bytes).Int()
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
	case -4:
		return budgetError(limits.Bytes)
	}
	return nil
}

// budgetError is the refusal of a record that does not fit in the byte budget, worded as
// runtime.MemoryTaskStore words it.
func budgetError(limit int64) error {
	return fmt.Errorf("%w: the task store's budget of %d bytes is used up", runtime.ErrTaskLimit, limit)
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

// updateTaskScript writes an updated record (keeping its TTL) and its new charge against the
// byte budget, unless it grows past the budget of the last Create: then the tasks whose TTL
// ran out are forgotten first (prune), and the record is refused ({-1, budget}) if it still
// does not fit. A record gone meanwhile is not brought back ({0}). Run in MULTI after a
// WATCH of the record, so that it writes what fn made of the record as last read.
// KEYS: record, total index, sizes, bytes. ARGV: record JSON, record size, id, now ms, task
// key prefix.
var updateTaskScript = redis.NewScript(pruneTasksLua + `
local size = tonumber(ARGV[2])
local grow = size - (tonumber(redis.call('HGET', KEYS[3], ARGV[3])) or 0)
local limit = tonumber(redis.call('HGET', KEYS[4], 'limit')) or 0
if grow > 0 and limit > 0 and (tonumber(redis.call('HGET', KEYS[4], 'used')) or 0) + grow > limit then
  prune(KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[4]), ARGV[5])
  grow = size - (tonumber(redis.call('HGET', KEYS[3], ARGV[3])) or 0)
  if redis.call('EXISTS', KEYS[1]) == 1 and (tonumber(redis.call('HGET', KEYS[4], 'used')) or 0) + grow > limit then
    return {-1, redis.call('HGET', KEYS[4], 'limit')}
  end
end
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
redis.call('HSET', KEYS[3], ARGV[3], ARGV[2])
redis.call('HINCRBY', KEYS[4], 'used', grow)
return {1}
`)

// Update implements runtime.TaskStore: WATCH the record, apply fn, write it back (keeping its
// TTL, charging its new size) with updateTaskScript in MULTI; again when another writer came
// first. An Update that grows the record past the byte budget is refused with
// runtime.ErrTaskLimit, and leaves the record as it was.
func (ts *TaskStore) Update(ctx context.Context, id string, fn func(*runtime.TaskRecord) error) (*runtime.TaskRecord, error) {
	key := ts.taskKey(id)
	keys := []string{key, ts.allKey(), ts.sizesKey(), ts.bytesKey()}
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
		var res *redis.Cmd
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			res = updateTaskScript.Eval(ctx, p, keys, nb, rec.Size(), id, time.Now().UnixMilli(), ts.prefix+"t:")
			return nil
		})
		if err != nil {
			return err
		}
		v, err := res.Slice()
		if err != nil || len(v) == 0 {
			return fmt.Errorf("redismcp: unexpected answer %v to a task update: %w", v, err)
		}
		switch v[0] {
		case int64(1):
			out = rec
			return nil
		case int64(0):
			return runtime.ErrTaskNotFound
		}
		var limit int64
		if len(v) > 1 {
			s, _ := v[1].(string)
			limit, _ = strconv.ParseInt(s, 10, 64)
		}
		return budgetError(limit)
	}
	for range maxTaskRetries {
		err := ts.rdb.Watch(ctx, txf, key)
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, redis.TxFailedErr):
			continue // another replica wrote first
		case errors.Is(err, runtime.ErrTaskNotFound), errors.Is(err, runtime.ErrTaskLimit):
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

// deleteTaskScript forgets a task: its record, its entries in the total index and (when
// given) its owner's index, and its charge against the byte budget.
// KEYS: record, total index, sizes, bytes[, owner index]. ARGV: id.
var deleteTaskScript = redis.NewScript(`
redis.call('DEL', KEYS[1])
local size = tonumber(redis.call('HGET', KEYS[3], ARGV[1]))
if size then
  redis.call('HDEL', KEYS[3], ARGV[1])
  redis.call('HINCRBY', KEYS[4], 'used', -size)
end
redis.call('ZREM', KEYS[2], ARGV[1])
if KEYS[5] then redis.call('ZREM', KEYS[5], ARGV[1]) end
return 1
`)

// Delete implements runtime.TaskStore. A record whose TTL ran out is deleted too (Redis may
// not have expired it yet), and its charge released.
func (ts *TaskStore) Delete(ctx context.Context, id string) error {
	keys := []string{ts.taskKey(id), ts.allKey(), ts.sizesKey(), ts.bytesKey()}
	rec, err := ts.Get(ctx, id)
	switch {
	case err == nil:
		keys = append(keys, ts.ownerKey(rec.Owner))
	case !errors.Is(err, runtime.ErrTaskNotFound):
		return err
	}
	return wrap("delete task", ctxErr(ctx, deleteTaskScript.Run(ctx, ts.rdb, keys, id).Err()))
}
