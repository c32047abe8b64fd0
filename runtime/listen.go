package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
)

// SubscriptionFilter says which change notifications a subscriptions/listen stream carries
// (spec 2026-07-28, Subscriptions, Notification Filter).
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// wants reports whether the filter admits a notification (for a resource update, of uri).
func (f *SubscriptionFilter) wants(method, uri string) bool {
	switch method {
	case notifToolsListChanged:
		return f.ToolsListChanged
	case notifPromptsListChanged:
		return f.PromptsListChanged
	case notifResourcesListChanged:
		return f.ResourcesListChanged
	case notifResourceUpdated:
		return slices.Contains(f.ResourceSubscriptions, uri)
	}
	return false
}

// listener is one open subscriptions/listen stream.
type listener struct {
	st     *stream
	id     *ID
	filter SubscriptionFilter
}

// maxResourceSubscriptions bounds the URIs of one subscriptions/listen request.
const maxResourceSubscriptions = 1000

// serveListen answers subscriptions/listen: an SSE stream that starts with
// notifications/subscriptions/acknowledged and then carries the change notifications the
// filter asks for, until the client closes it or the server shuts down, when it ends with the
// request's result (spec 2026-07-28, Subscriptions).
func (s *Server) serveListen(w http.ResponseWriter, r *http.Request, mr *modernRequest, msg *wireMessage) {
	filter, rpcErr := listenFilter(msg.Params)
	if rpcErr != nil {
		s.writeJSON(w, http.StatusBadRequest, encodeResponse(msg.ID, nil, rpcErr))
		return
	}
	served := false
	_, err := s.callDirect(r, mr, msg, func(context.Context, *Request) (*Response, error) {
		served = true
		s.runListen(w, r, mr, msg, filter)
		return &Response{}, nil
	})
	if err != nil && !served {
		s.writeJSON(w, statusOf(err), encodeResponse(msg.ID, nil, toRPCError(err)))
	}
}

// listenFilter reads the filter of a subscriptions/listen request, which it needs, of at most
// maxResourceSubscriptions URIs.
func listenFilter(params json.RawMessage) (*SubscriptionFilter, *Error) {
	var p struct {
		Notifications *SubscriptionFilter `json:"notifications"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return nil, err
	}
	if p.Notifications == nil {
		return nil, NewError(CodeInvalidParams, "subscriptions/listen needs params.notifications, the filter of the notifications to send")
	}
	if len(p.Notifications.ResourceSubscriptions) > maxResourceSubscriptions {
		return nil, Errorf(CodeInvalidParams, "too many resourceSubscriptions (limit %d): open several streams", maxResourceSubscriptions)
	}
	return p.Notifications, nil
}

// runListen writes a subscriptions/listen stream until it ends.
func (s *Server) runListen(w http.ResponseWriter, r *http.Request, mr *modernRequest, msg *wireMessage, filter *SubscriptionFilter) {
	sess := &mr.sess
	st := newStream(sess, "listen", true, min(s.cfg.maxQueuedEvents, 1000))
	my, _ := st.attach()
	l := &listener{st: st, id: msg.ID, filter: *filter}
	idMeta := map[string]json.RawMessage{metaSubscriptionID: json.RawMessage(msg.ID.raw)}
	ack, _ := encodeRequest(nil, notifAcknowledged, map[string]any{"_meta": idMeta, "notifications": l.filter})
	_ = st.send(ack, false) // first: nothing is registered to send before it
	s.addListener(l)
	defer s.removeListener(l)
	// Graceful closure on shutdown: the listen request's own result ends the stream.
	stop := context.AfterFunc(s.baseCtx, func() {
		res, _ := json.Marshal(map[string]any{"resultType": resultTypeComplete, "_meta": idMeta})
		_ = st.send(encodeResponse(msg.ID, res, nil), true)
	})
	defer stop()
	s.serveStream(r.Context(), w, st, my, modeSSE, nil)
}

// addListener registers a listen stream for the notifications its filter asks for.
func (s *Server) addListener(l *listener) {
	s.modern.mu.Lock()
	defer s.modern.mu.Unlock()
	if s.modern.listeners == nil {
		s.modern.listeners = make(map[*listener]struct{})
	}
	s.modern.listeners[l] = struct{}{}
}

// removeListener forgets a listen stream that ended.
func (s *Server) removeListener(l *listener) {
	s.modern.mu.Lock()
	defer s.modern.mu.Unlock()
	delete(s.modern.listeners, l)
}

// notifyListeners sends a change notification to the listen streams whose filter asks for it,
// with the stream's subscription ID in _meta. uri is the updated resource's, else "".
func (s *Server) notifyListeners(method, uri string) {
	for _, l := range s.listenersFor(method, uri) {
		if err := l.notify(method, uri); err != nil {
			s.peerDebug("mcp: change notification not queued on a listen stream", "method", method, "error", err)
		}
	}
}

// listenersFor returns the listen streams whose filter asks for method (about uri).
func (s *Server) listenersFor(method, uri string) []*listener {
	s.modern.mu.Lock()
	defer s.modern.mu.Unlock()
	var to []*listener
	for l := range s.modern.listeners {
		if l.filter.wants(method, uri) {
			to = append(to, l)
		}
	}
	return to
}

// notify queues a change notification on the listen stream, with its subscription ID in
// _meta, and uri for a resource's update.
func (l *listener) notify(method, uri string) error {
	params := map[string]any{"_meta": map[string]json.RawMessage{metaSubscriptionID: json.RawMessage(l.id.raw)}}
	if uri != "" {
		params["uri"] = uri
	}
	data, err := encodeRequest(nil, method, params)
	if err != nil {
		return nil // nothing to send: the params are the server's own
	}
	return l.st.send(data, false)
}
