package protojsonfast

import (
	"encoding/json"
	"github.com/stretchr/testify/require"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
)

// FuzzResultJSONMatchesProtojson decodes random protobuf wire bytes into result messages, so
// that every field takes arbitrary values (unknown enum numbers, invalid UTF-8, out-of-range
// timestamps, NaN, huge maps), and checks that Append and protojson agree: both fail,
// or both succeed with the same JSON value.
func FuzzResultJSONMatchesProtojson(f *testing.F) {
	seeds := []proto.Message{
		&weatherv1.GetForecastResponse{
			Place:    &weatherv1.Place{Name: "Zürich", Coordinates: &weatherv1.Coordinates{Latitude: 47.4, Longitude: 8.5}},
			Days:     []*weatherv1.DailyForecast{{Date: "2026-01-01", High: 1.5, Low: -2, PrecipitationChance: map[string]int32{"night": 90}}},
			IssuedAt: &timestamppb.Timestamp{Seconds: 1767225600, Nanos: 1000},
		},
		&weatherv1.ListAlertsResponse{Alerts: []*weatherv1.Alert{{Id: "a", Severity: weatherv1.Severity_SEVERITY_SEVERE}}},
		&mcpv1.ResourceLink{Uri: "file:///x", Size: proto.Int64(-1)},
	}
	for i, m := range seeds {
		b, err := proto.Marshal(m)
		require.NoError(f, err)
		f.Add(uint8(i), b)
	}
	f.Fuzz(func(t *testing.T, kind uint8, wire []byte) {
		var m proto.Message
		switch kind % 4 {
		case 0:
			m = &weatherv1.GetForecastResponse{}
		case 1:
			m = &weatherv1.ListAlertsResponse{}
		case 2:
			m = &mcpv1.ResourceLink{}
		default:
			m = &mcpv1.EmbeddedResource{}
		}
		if err := proto.Unmarshal(wire, m); err != nil {
			return
		}
		want, wantErr := protojson.Marshal(m)
		got, gotErr := Append(nil, m)
		require.Falsef(t, (wantErr != nil) != (gotErr != nil), "protojson error %v, Append error %v, for %v", wantErr, gotErr, m)
		if wantErr != nil {
			return
		}
		var w, g any
		require.NoErrorf(t, json.Unmarshal(want, &w), "protojson wrote invalid JSON %q", want)
		require.NoErrorf(t, json.Unmarshal(got, &g), "Append wrote invalid JSON %q", got)
		require.Truef(t, reflect.DeepEqual(w, g), "Append differs from protojson:\n got %s\nwant %s", got, want)
	})
}
