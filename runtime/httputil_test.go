package runtime

import (
	"net/http"
	"testing"
)

func TestAcceptsJSONAndSSE(t *testing.T) {
	for _, tc := range []struct {
		accept []string
		want   bool
	}{
		{[]string{"application/json, text/event-stream"}, true},
		{[]string{"text/event-stream, application/json"}, true},
		{[]string{"application/json,text/event-stream"}, true},
		{[]string{"Application/JSON; q=0.9, text/event-stream;q=1"}, true},
		{[]string{"application/json", "text/event-stream"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/*, text/*"}, true},
		{[]string{"application/json"}, false},
		{[]string{"text/event-stream"}, false},
		{[]string{"application/json, text/html"}, false},
		{nil, false},
	} {
		r := &http.Request{Header: http.Header{}}
		for _, v := range tc.accept {
			r.Header.Add("Accept", v)
		}
		if got := acceptsJSONAndSSE(r); got != tc.want {
			t.Errorf("Accept %q: got %v, want %v", tc.accept, got, tc.want)
		}
	}
}
