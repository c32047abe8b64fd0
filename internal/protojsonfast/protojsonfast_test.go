package protojsonfast

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
)

// TestResultJSONMatchesProtojson checks that Append writes what protojson.Marshal
// writes (the same members and values), or fails where protojson fails.
func TestResultJSONMatchesProtojson(t *testing.T) {
	t.Parallel()
	size := int64(0)
	forecast := &weatherv1.GetForecastResponse{
		Place: &weatherv1.Place{Name: "Zürich \"HB\" \\ \t\n\u2028 <&>", Coordinates: &weatherv1.Coordinates{Latitude: 47.378, Longitude: math.Copysign(0, -1)}, TimeZone: "Europe/Zurich"},
		Days: []*weatherv1.DailyForecast{
			{Date: "2026-01-01", Condition: weatherv1.Condition_CONDITION_SNOW, High: 1e21, Low: -1e-7, PrecipitationChance: map[string]int32{"night": 90, "morning": 10, "": -1, "évening": 0}},
			{Date: "2026-01-02", Condition: weatherv1.Condition(99), High: math.MaxFloat64, Low: math.SmallestNonzeroFloat64},
			{Condition: weatherv1.Condition_CONDITION_UNSPECIFIED, High: 123.456, Low: 5e-324},
			{High: math.NaN(), Low: math.Inf(-1)},
			{High: math.Inf(1), Low: 0.1 + 0.2},
		},
		IssuedAt: &timestamppb.Timestamp{Seconds: 1767225600, Nanos: 120000000},
		Unit:     weatherv1.TemperatureUnit_TEMPERATURE_UNIT_FAHRENHEIT,
	}
	cases := []struct {
		name    string
		m       proto.Message
		wantErr bool
	}{
		{"empty", &weatherv1.GetForecastResponse{}, false},
		{"forecast", forecast, false},
		{"timestamp nanos 0", &weatherv1.Alert{Id: "a", StartsAt: &timestamppb.Timestamp{Seconds: 0}}, false},
		{"timestamp micros", &weatherv1.Alert{StartsAt: &timestamppb.Timestamp{Seconds: -62135596800, Nanos: 5000}}, false},
		{"timestamp nanos", &weatherv1.Alert{StartsAt: &timestamppb.Timestamp{Seconds: 253402300799, Nanos: 999999999}, EndsAt: &timestamppb.Timestamp{Nanos: 1}}, false},
		{"timestamp out of range", &weatherv1.Alert{StartsAt: &timestamppb.Timestamp{Seconds: 253402300800}}, true},
		{"timestamp bad nanos", &weatherv1.Alert{StartsAt: &timestamppb.Timestamp{Nanos: -1}}, true},
		{"alerts", &weatherv1.ListAlertsResponse{Alerts: []*weatherv1.Alert{{Id: "1", Severity: weatherv1.Severity_SEVERITY_SEVERE}, {}, {Headline: "x"}}}, false},
		{"optional int64 zero", &mcpv1.ResourceLink{Uri: "file:///a", Size: &size}, false},
		{"optional int64 big", &mcpv1.ResourceLink{Size: proto.Int64(math.MinInt64)}, false},
		{"bytes", &mcpv1.ImageContent{Data: []byte{0, 1, 2, 250, 251, 252, 253, 254, 255}, MimeType: "image/png"}, false},
		{"oneof bytes", &mcpv1.EmbeddedResource{Uri: "u", Contents: &mcpv1.EmbeddedResource_Blob{Blob: []byte{}}}, false},
		{"oneof string", &mcpv1.Content{Kind: &mcpv1.Content_Text{Text: &mcpv1.TextContent{}}}, false},
		{"invalid UTF-8", &mcpv1.TextContent{Text: "a\xffb"}, true},
		{"invalid UTF-8 map key", &weatherv1.DailyForecast{PrecipitationChance: map[string]int32{"\xff": 1}}, true},
		{"struct (protojson's path)", &mcpv1.ToolResult{StructuredContent: mustStruct(t, map[string]any{"a": 1.5, "b": []any{"x", nil}})}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, wantErr := protojson.Marshal(c.m)
			got, gotErr := Append([]byte("prefix"), c.m)
			require.Equal(t, c.wantErr, wantErr != nil, "protojson error: %v", wantErr)
			if wantErr != nil {
				require.Error(t, gotErr, "protojson fails (%v), Append wrote %s", wantErr, got)
				return
			}
			require.NoError(t, gotErr, "Append (protojson wrote %s)", want)
			got, ok := bytes.CutPrefix(got, []byte("prefix"))
			require.True(t, ok, "the prefix was not kept: %s", got)
			// Numbers are compared as written (json.Number), not as float64.
			if diff := cmp.Diff(decodeAny(t, want), decodeAny(t, got)); diff != "" {
				require.Fail(t, fmt.Sprintf("different JSON (-protojson +Append):\n%s\n got %s\nwant %s", diff, got, want))
			}
			back := c.m.ProtoReflect().Type().New().Interface()
			require.NoError(t, protojson.Unmarshal(got, back), "protojson cannot read %s", got)
			if strings.Contains(c.name, "forecast") {
				return // NaN != NaN
			}
			if diff := cmp.Diff(c.m, back, protocmp.Transform()); diff != "" {
				require.Fail(t, fmt.Sprintf("round trip (-want +got):\n%s", diff))
			}
		})
	}
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "invalid JSON %s", b)
	return v
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}
