package redismcp

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/protomcp/protomcp/runtime"
	"github.com/redis/go-redis/v9"
)

// Create implements runtime.SessionStore: the session's hash, with its lifetime.
func (s *Store) Create(ctx context.Context, id string, st *runtime.SessionState) error {
	info, err := json.Marshal(st.ClientInfo)
	if err != nil {
		return err
	}
	caps, err := json.Marshal(st.Capabilities)
	if err != nil {
		return err
	}
	fields := []any{fieldVersion, st.ProtocolVersion, fieldInfo, info, fieldCaps, caps, fieldOwner, st.Owner}
	if st.LogLevel != "" {
		fields = append(fields, fieldLevel, string(st.LogLevel))
	}
	for _, uri := range st.Subscriptions {
		fields = append(fields, subPrefix+uri, "1")
	}
	key := s.sessionKey(id)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, fields...)
		p.PExpire(ctx, key, s.opts.SessionTTL)
		return nil
	})
	return wrap("create session", ctxErr(ctx, err))
}

// Load implements runtime.SessionStore: HGETALL, and the lifetime extended, in one round trip.
func (s *Store) Load(ctx context.Context, id string) (*runtime.SessionState, error) {
	key := s.sessionKey(id)
	var get *redis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.HGetAll(ctx, key)
		p.PExpire(ctx, key, s.opts.SessionTTL)
		return nil
	})
	if err != nil {
		return nil, wrap("load session", ctxErr(ctx, err))
	}
	m := get.Val()
	if len(m) == 0 {
		return nil, runtime.ErrSessionNotFound
	}
	st := &runtime.SessionState{
		ProtocolVersion: m[fieldVersion],
		LogLevel:        runtime.LoggingLevel(m[fieldLevel]),
		Owner:           m[fieldOwner],
	}
	if v := m[fieldInfo]; v != "" {
		if err := json.Unmarshal([]byte(v), &st.ClientInfo); err != nil {
			return nil, wrap("decode session", err)
		}
	}
	if v := m[fieldCaps]; v != "" {
		if err := json.Unmarshal([]byte(v), &st.Capabilities); err != nil {
			return nil, wrap("decode session", err)
		}
	}
	for k := range m {
		if uri, ok := strings.CutPrefix(k, subPrefix); ok {
			st.Subscriptions = append(st.Subscriptions, uri)
		}
	}
	return st, nil
}

// updateScript changes fields of a session only if it still exists: a change racing with a
// DELETE must not bring the session back.
var updateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HDEL', KEYS[1], ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`)

// Update implements runtime.SessionStore.
func (s *Store) Update(ctx context.Context, id string, ch runtime.SessionChange) error {
	var setField, setValue, delField string
	switch {
	case ch.LogLevel != "":
		setField, setValue = fieldLevel, string(ch.LogLevel)
	case ch.Subscribe != "":
		setField, setValue = subPrefix+ch.Subscribe, "1"
	}
	if ch.Unsubscribe != "" {
		delField = subPrefix + ch.Unsubscribe
	}
	n, err := updateScript.Run(ctx, s.rdb, []string{s.sessionKey(id)}, s.opts.SessionTTL.Milliseconds(), setField, setValue, delField).Int()
	if err != nil {
		return wrap("update session", ctxErr(ctx, err))
	}
	if n == 0 {
		return runtime.ErrSessionNotFound
	}
	return nil
}

// Touch implements runtime.SessionStore.
func (s *Store) Touch(ctx context.Context, id string) error {
	ok, err := s.rdb.PExpire(ctx, s.sessionKey(id), s.opts.SessionTTL).Result()
	if err != nil {
		return wrap("touch session", ctxErr(ctx, err))
	}
	if !ok {
		return runtime.ErrSessionNotFound
	}
	return nil
}

// Delete implements runtime.SessionStore.
func (s *Store) Delete(ctx context.Context, id string) error {
	return wrap("delete session", ctxErr(ctx, s.rdb.Del(ctx, s.sessionKey(id)).Err()))
}
