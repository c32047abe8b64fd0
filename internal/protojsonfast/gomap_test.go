package protojsonfast

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	contractv1 "github.com/protomcp/protomcp/gen/contract/v1"
)

// TestGoMapsMatchProtojson: maps written from their Go maps (every string-keyed scalar map
// type) are written as protojson writes them, and as the protoreflect path writes the same
// message held by dynamicpb.
func TestGoMapsMatchProtojson(t *testing.T) {
	t.Parallel()
	full := &contractv1.ScalarMaps{
		Strings:  map[string]string{"b": "x\"y", "a": "", "é": "中文", "": "empty key"},
		Bools:    map[string]bool{"t": true, "f": false},
		Int64S:   map[string]int64{"min": math.MinInt64, "max": math.MaxInt64, "zero": 0},
		Uint32S:  map[string]uint32{"max": math.MaxUint32},
		Uint64S:  map[string]uint64{"max": math.MaxUint64},
		Floats:   map[string]float32{"third": 1.0 / 3, "tiny": 1e-7, "nan": float32(math.NaN()), "inf": float32(math.Inf(1))},
		Doubles:  map[string]float64{"third": 1.0 / 3, "big": 1e21, "neg inf": math.Inf(-1), "-0": math.Copysign(0, -1)},
		Sint32S:  map[string]int32{"neg": -5},
		Fixed64S: map[string]uint64{"one": 1},
		Colors:   map[string]contractv1.Color{"red": contractv1.Color_COLOR_RED, "unknown": 42},
		ByNumber: map[int32]string{-1: "minus one", 10: "ten", 2: "two"},
	}
	for _, tc := range []struct {
		name    string
		m       *contractv1.ScalarMaps
		wantErr bool
	}{
		{"every type", full, false},
		{"empty maps", &contractv1.ScalarMaps{Strings: map[string]string{}, Doubles: map[string]float64{}}, false},
		{"invalid UTF-8 value", &contractv1.ScalarMaps{Strings: map[string]string{"k": "a\xffb"}}, true},
		{"invalid UTF-8 key", &contractv1.ScalarMaps{Bools: map[string]bool{"\xfe": true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := protojson.Marshal(tc.m)
			got, gotErr := Append(nil, tc.m)
			require.Equal(t, tc.wantErr, wantErr != nil, "protojson: %v", wantErr)
			if tc.wantErr {
				require.Error(t, gotErr)
				return
			}
			require.NoError(t, gotErr)
			assert.Equal(t, decodeAny(t, want), decodeAny(t, got), "against protojson:\n got %s\nwant %s", got, want)

			dyn := dynamicpb.NewMessage(tc.m.ProtoReflect().Descriptor())
			wire, err := proto.Marshal(tc.m)
			require.NoError(t, err)
			require.NoError(t, proto.Unmarshal(wire, dyn))
			slow, err := Append(nil, dyn)
			require.NoError(t, err)
			assert.Equal(t, string(slow), string(got), "the Go-map path and the protoreflect path")
		})
	}
}
