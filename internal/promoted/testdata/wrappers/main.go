// Command wrappers prints, for each method of a set of types, whether promoted.Wrapper
// reports it as compiler-written: "Type.Method wrapper" or "Type.Method declared", one a line.
package main

import (
	"fmt"
	"reflect"

	"github.com/protomcp/protomcp/internal/promoted"
)

type base struct{}

func (base) A() {}
func (base) B() {}

type value struct{ base }

func (value) A() {}

type pointer struct{ base }

func (*pointer) A() {}

type byPointer struct{ *base }

func (byPointer) B() {}

type generic[X any] struct{ base }

func (generic[X]) A() {}

type genericPointer[X any] struct{ base }

func (*genericPointer[X]) B() {}

func main() {
	for _, v := range []any{
		base{}, &base{}, value{}, &value{}, &pointer{}, byPointer{}, &byPointer{},
		generic[int]{}, &generic[string]{}, &genericPointer[int]{},
	} {
		t := reflect.TypeOf(v)
		for i := range t.NumMethod() {
			m := t.Method(i)
			what := "declared"
			if promoted.Wrapper(m) {
				what = "wrapper"
			}
			fmt.Printf("%v.%s %s\n", t, m.Name, what)
		}
	}
}
