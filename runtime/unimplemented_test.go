package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

type unimplBase struct{}

func (unimplBase) A(context.Context) error { return nil }
func (unimplBase) B(context.Context) error { return nil }

type ptrImpl struct{ unimplBase }

func (*ptrImpl) A(context.Context) error { return nil }

type valImpl struct{ unimplBase }

func (valImpl) A(context.Context) error { return nil }

type byPointer struct{ *unimplBase }

func (byPointer) B(context.Context) error { return nil }

type deeper struct{ ptrImpl }

type other struct{}

func (other) B(context.Context) error { return nil }

type twoWays struct {
	unimplBase
	other
}

type generic[X any] struct{ unimplBase }

func (generic[X]) A(context.Context) error { return nil }

type genericPtr[X any] struct{ *unimplBase }

func (*genericPtr[X]) B(context.Context) error { return nil }

type aer interface{ A(context.Context) error }

type viaInterface struct {
	aer
	unimplBase
}

func TestUnimplementedMethods(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		h    any
		want map[string]bool
	}{
		{"the base itself", unimplBase{}, map[string]bool{"A": true, "B": true}},
		{"a pointer to the base", &unimplBase{}, map[string]bool{"A": true, "B": true}},
		{"pointer receiver", &ptrImpl{}, map[string]bool{"B": true}},
		{"value receiver, by value", valImpl{}, map[string]bool{"B": true}},
		{"value receiver, by pointer", &valImpl{}, map[string]bool{"B": true}},
		{"base embedded by pointer", byPointer{}, map[string]bool{"A": true}},
		{"two levels of embedding", &deeper{}, map[string]bool{"B": true}},
		{"ambiguous embedding counts as implemented", &twoWays{}, map[string]bool{"A": true}},
		{"an embedded interface counts as implemented", &viaInterface{}, map[string]bool{"B": true}},
		{"a generic type", generic[int]{}, map[string]bool{"B": true}},
		{"a pointer to a generic type", &generic[string]{}, map[string]bool{"B": true}},
		{"a generic type embedding the base by pointer", &genericPtr[int]{}, map[string]bool{"A": true}},
		{"not embedding the base", other{}, map[string]bool{}},
		{"nil", nil, map[string]bool{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := UnimplementedMethods(tc.h, unimplBase{}, "A", "B")
			assert.Equal(t, tc.want, got)
		})
	}
}

// The types above are only inspected by reflection; these uses keep staticcheck content.
var _ = []any{twoWays{}.other.B, viaInterface{}.aer}
