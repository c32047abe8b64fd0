package runtime

import (
	"context"
	"encoding/json"
)

// This file serves logging/setLevel (spec section "Logging"); Caller.Log sends the messages.

func (s *Server) handleSetLevel(ctx context.Context, rs *requestState, params json.RawMessage) (any, error) {
	var p struct {
		Level LoggingLevel `json:"level"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	if _, ok := levelRank[p.Level]; !ok {
		return nil, Errorf(CodeInvalidParams, "invalid log level %q; use one of debug, info, notice, warning, error, critical, alert, emergency", truncate(string(p.Level), 40))
	}
	if err := s.updateShared(ctx, rs.sess, SessionChange{LogLevel: p.Level}); err != nil {
		return nil, err
	}
	rs.sess.logLevel.Store(&p.Level)
	return json.RawMessage("{}"), nil
}
