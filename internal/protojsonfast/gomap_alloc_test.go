//go:build !race

package protojsonfast

// Allocation counts are exact only without the race detector, under which sync.Pool drops
// items at random.

import (
	"testing"

	"github.com/stretchr/testify/assert"

	contractv1 "github.com/protomcp/protomcp/gen/contract/v1"
)

// TestGoMapAllocations: a generated message's string-keyed map costs no allocation per entry.
func TestGoMapAllocations(t *testing.T) {
	m := &contractv1.ScalarMaps{Strings: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}, Doubles: map[string]float64{"x": 1.5, "y": 2.5}}
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = Append(buf[:0], m); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per Append of two small maps")
}
