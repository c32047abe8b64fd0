package runtime

import (
	"reflect"

	"github.com/protomcp/protomcp/internal/promoted"
)

// UnimplementedMethods reports which methods of handler h are served by base, a generated
// Unimplemented...Handler embedded in it (at any depth, by value or by pointer), rather than
// by a method of h's own: generated Register functions leave those rpcs out, so that
// tools/list, prompts/list and resources/templates/list never offer what would only fail.
// A method reached through an embedded interface counts as implemented: its dynamic value is
// unknown at registration.
//
// reflect lists a promoted method like a declared one; the one way to tell them apart, the
// compiler's name for the wrappers it writes, is isolated in internal/promoted and tested
// there in real builds.
func UnimplementedMethods(h, base any, methods ...string) map[string]bool {
	out := make(map[string]bool)
	bt := reflect.TypeOf(base)
	for _, m := range methods {
		if servedBy(reflect.TypeOf(h), bt, m, 0) {
			out[m] = true
		}
	}
	return out
}

// maxEmbedding bounds the walk down embedded fields.
const maxEmbedding = 16

// servedBy reports whether t's method is base's own: t is base or a pointer to it, or t has
// the method only from the compiler, through a type whose method is base's.
func servedBy(t, base reflect.Type, method string, depth int) bool {
	if t == nil || depth > maxEmbedding {
		return false
	}
	if t == base || (t.Kind() == reflect.Pointer && t.Elem() == base) {
		_, ok := t.MethodByName(method)
		return ok
	}
	if t.Kind() == reflect.Interface {
		return false
	}
	m, ok := t.MethodByName(method)
	if !ok || !promoted.Wrapper(m) {
		return false // no such method, or declared by t itself
	}
	return servedBy(wrapped(t, method), base, method, depth+1)
}

// wrapped is the type whose method a compiler-written method of t calls: for a pointer to a
// type that has the method (a value receiver), that type, whose method may itself be declared
// or promoted; otherwise the embedded field of t's struct that has the method.
func wrapped(t reflect.Type, method string) reflect.Type {
	if t.Kind() == reflect.Pointer {
		if _, ok := t.Elem().MethodByName(method); ok {
			return t.Elem()
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return embeddedWith(t, method)
}

// embeddedWith is the one embedded field of struct st whose type's method set (or its
// pointer's, which includes the value's) has the method, or nil. When several have it, Go
// picks the shallowest; rather than redo that, such a method counts as implemented.
func embeddedWith(st reflect.Type, method string) reflect.Type {
	var from reflect.Type
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.Anonymous {
			continue
		}
		ft := f.Type
		if ft.Kind() != reflect.Pointer && ft.Kind() != reflect.Interface {
			ft = reflect.PointerTo(ft)
		}
		if _, ok := ft.MethodByName(method); !ok {
			continue
		}
		if from != nil {
			return nil
		}
		from = ft
	}
	return from
}
