package runtime

import (
	"encoding/base64"
	"encoding/json"
	"iter"
	"strconv"
	"sync"
)

// registry is an insertion-ordered, concurrency-safe map of named entries, with stable cursor
// pagination: a cursor encodes the position after the last entry returned.
type registry[T any] struct {
	mu    sync.RWMutex
	order []string
	items map[string]T
}

// init makes the registry's map.
func (r *registry[T]) init() { r.items = make(map[string]T) }

// add adds an entry; it reports false, changing nothing, if the name is taken.
func (r *registry[T]) add(name string, v T) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, exists := r.items[name]; exists {
		return false
	}
	r.order = append(r.order, name)
	r.items[name] = v
	return true
}

// remove removes an entry; it reports whether there was one.
func (r *registry[T]) remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.items[name]; !ok {
		return false
	}
	delete(r.items, name)
	for i, n := range r.order {
		if n == name {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
	return true
}

// get returns the entry name, if there is one.
func (r *registry[T]) get(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.items[name]
	return v, ok
}

// page returns up to size entries after cursor that keep accepts (every entry when keep is
// nil), and the cursor of the next page ("" when no later entry is kept): an entry keep
// refuses takes no room on a page, so a filtered list's pages are as full as another's.
func (r *registry[T]) page(cursor string, size int, keep func(T) bool) ([]T, string, *Error) {
	start, rpcErr := decodeCursor(cursor)
	if rpcErr != nil {
		return nil, "", rpcErr
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	start = min(start, len(r.order))
	out := make([]T, 0, min(size, len(r.order)-start))
	i := start
	for ; i < len(r.order); i++ {
		v := r.items[r.order[i]]
		if keep != nil && !keep(v) {
			continue
		}
		if len(out) == size {
			break // a kept entry beyond the page: there is a next one
		}
		out = append(out, v)
	}
	next := ""
	if i < len(r.order) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(i)))
	}
	return out, next, nil
}

// pageOf returns the page of a list request's params (its cursor) of up to size entries
// that keep accepts (nil: all), and the cursor of the next page ("" at the end).
func (r *registry[T]) pageOf(params json.RawMessage, size int, keep func(T) bool) ([]T, string, error) {
	cursor, err := cursorOf(params)
	if err != nil {
		return nil, "", err
	}
	items, next, rpcErr := r.page(cursor, size, keep)
	if rpcErr != nil {
		return nil, "", rpcErr
	}
	return items, next, nil
}

// hints yields what every entry contributes to its list's cache hint (cache_hint.go), under
// the registry's read lock, without copying the list.
func (r *registry[T]) hints(hint func(T) listHint) iter.Seq[listHint] {
	return func(yield func(listHint) bool) {
		r.mu.RLock()
		defer r.mu.RUnlock()
		for _, name := range r.order {
			if !yield(hint(r.items[name])) {
				return
			}
		}
	}
}

// cursorOf reads params.cursor.
func cursorOf(params json.RawMessage) (string, error) {
	if len(params) == 0 {
		return "", nil
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	if err := unmarshalParams(params, &p); err != nil {
		return "", err
	}
	return p.Cursor, nil
}

// decodeCursor returns the position that a cursor made by page names (0 for none), refusing
// a cursor that page did not make.
func decodeCursor(cursor string) (int, *Error) {
	if cursor == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	n, err2 := strconv.Atoi(string(b))
	if err != nil || err2 != nil || n < 0 {
		return 0, Errorf(CodeInvalidParams, "invalid cursor %q: pass back a nextCursor exactly as received", truncate(cursor, 40))
	}
	return n, nil
}

// all returns every entry, in the order they were added.
func (r *registry[T]) all() []T {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]T, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, r.items[name])
	}
	return out
}
