package protojsonfast

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Maps of generated messages are written from their Go maps. Through protoreflect, each entry
// costs several allocations (the ranger copies every key and value into a reflect.Value, and
// Get converts the key back), which made a small map<string, int32> per element most of a
// weather forecast's encoding. A generated message keeps a map field as a plain Go map in an
// exported struct field; when the map's type is one of the string-keyed scalar maps below,
// appendGoMap ranges over it directly. Everything else (dynamic messages, other key or value
// types) takes the protoreflect path.

// goMapFields caches, per map field, where generated code keeps it (goMapField).
var goMapFields sync.Map // protoreflect.FieldDescriptor -> goMapField

// goMapField is a map field's Go struct field in one generated message type.
type goMapField struct {
	typ   reflect.Type // the generated struct type; other types (dynamicpb) take the slow path
	index int          // the struct field's index; -1 when there is none
}

// goMap returns the Go map that holds field fd of m, or nil when m is not a generated message
// or its struct keeps the field elsewhere.
func goMap(m protoreflect.Message, fd protoreflect.FieldDescriptor) any {
	rv := reflect.ValueOf(m.Interface())
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil
	}
	st := rv.Elem().Type()
	var f goMapField
	if v, ok := goMapFields.Load(fd); ok {
		f = v.(goMapField)
	} else {
		f = goMapField{typ: st, index: structFieldOf(st, fd)}
		goMapFields.Store(fd, f)
	}
	if f.typ != st || f.index < 0 {
		return nil
	}
	fv := rv.Elem().Field(f.index)
	if fv.Kind() != reflect.Map {
		return nil
	}
	return fv.Interface()
}

// structFieldOf returns the index of the exported field of st whose protobuf struct tag names
// fd, or -1.
func structFieldOf(st reflect.Type, fd protoreflect.FieldDescriptor) int {
	want := "name=" + string(fd.Name())
	for i := range st.NumField() {
		sf := st.Field(i)
		if !sf.IsExported() {
			continue
		}
		for part := range strings.SplitSeq(sf.Tag.Get("protobuf"), ",") {
			if part == want {
				return i
			}
		}
	}
	return -1
}

// keyBufs holds the key slices appendGoMap sorts (*[]string).
var keyBufs = sync.Pool{New: func() any { s := make([]string, 0, 16); return &s }}

// appendGoMap writes the map field fd of m from its Go map, with its keys in order as protojson
// writes them, and reports whether it could: false leaves b as it was, for the protoreflect
// path.
func appendGoMap(b []byte, m protoreflect.Message, fd protoreflect.FieldDescriptor) ([]byte, bool, error) {
	if fd.MapKey().Kind() != protoreflect.StringKind {
		return b, false, nil
	}
	switch gm := goMap(m, fd).(type) {
	case map[string]string:
		return appendSorted(b, gm, func(b []byte, v string) ([]byte, error) {
			if !utf8.ValidString(v) {
				return nil, errProtoJSON
			}
			return AppendString(b, v), nil
		})
	case map[string]bool:
		return appendSorted(b, gm, func(b []byte, v bool) ([]byte, error) { return strconv.AppendBool(b, v), nil })
	case map[string]int32:
		return appendSorted(b, gm, func(b []byte, v int32) ([]byte, error) { return strconv.AppendInt(b, int64(v), 10), nil })
	case map[string]uint32:
		return appendSorted(b, gm, func(b []byte, v uint32) ([]byte, error) { return strconv.AppendUint(b, uint64(v), 10), nil })
	case map[string]int64:
		return appendSorted(b, gm, func(b []byte, v int64) ([]byte, error) {
			return append(strconv.AppendInt(append(b, '"'), v, 10), '"'), nil
		})
	case map[string]uint64:
		return appendSorted(b, gm, func(b []byte, v uint64) ([]byte, error) {
			return append(strconv.AppendUint(append(b, '"'), v, 10), '"'), nil
		})
	case map[string]float32:
		return appendSorted(b, gm, func(b []byte, v float32) ([]byte, error) { return appendFloatJSON(b, float64(v), 32), nil })
	case map[string]float64:
		return appendSorted(b, gm, func(b []byte, v float64) ([]byte, error) { return appendFloatJSON(b, v, 64), nil })
	}
	return b, false, nil
}

// appendSorted writes gm as a JSON object with its keys sorted, each value by value.
func appendSorted[V any](b []byte, gm map[string]V, value func([]byte, V) ([]byte, error)) ([]byte, bool, error) {
	kp := keyBufs.Get().(*[]string)
	keys := (*kp)[:0]
	for k := range gm {
		if !utf8.ValidString(k) {
			keyBufs.Put(kp)
			return nil, true, errProtoJSON
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		if b, err = value(b, gm[k]); err != nil {
			break
		}
	}
	clear(keys)
	if cap(keys) <= 1024 {
		*kp = keys[:0]
	}
	keyBufs.Put(kp)
	if err != nil {
		return nil, true, err
	}
	return append(b, '}'), true, nil
}
