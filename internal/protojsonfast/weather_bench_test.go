package protojsonfast

import (
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
)

// forecast is a result of the shape the weather example answers: nested messages, a repeated
// message, floats, enums, a timestamp and a small map per element.
func forecast() *weatherv1.GetForecastResponse {
	resp := &weatherv1.GetForecastResponse{
		Place:    &weatherv1.Place{Name: "Paris, FR", Coordinates: &weatherv1.Coordinates{Latitude: 48.8566, Longitude: 2.3522}, TimeZone: "Europe/Paris"},
		IssuedAt: timestamppb.New(time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)),
		Unit:     weatherv1.TemperatureUnit_TEMPERATURE_UNIT_CELSIUS,
	}
	for i := range 3 {
		resp.Days = append(resp.Days, &weatherv1.DailyForecast{
			Date:                "2026-12-0" + string(rune('1'+i)),
			Condition:           weatherv1.Condition(1 + i),
			High:                11.5 + float64(i),
			Low:                 3 - float64(i),
			PrecipitationChance: map[string]int32{"morning": 20, "afternoon": 35, "evening": 41, "night": 12},
		})
	}
	return resp
}

func BenchmarkAppendForecast(b *testing.B) {
	m := forecast()
	buf := make([]byte, 0, 4096)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = Append(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := protojson.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecoderForecastArgs(b *testing.B) {
	data := []byte(`{"city":"Paris, FR","days":3}`)
	d := NewDecoder((&weatherv1.GetForecastRequest{}).ProtoReflect().Descriptor())
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !d.Unmarshal(data, &weatherv1.GetForecastRequest{}) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := protojson.Unmarshal(data, &weatherv1.GetForecastRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
