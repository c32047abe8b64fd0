package runtime

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"sync"
	"time"
)

// eventReader reads the events of an SSE stream, as the HTML Living Standard's "Interpreting an
// event stream" (Server-sent events) describes them: lines end with CR LF, LF or CR; a blank
// line dispatches the event read since the last one; "data" lines are joined with LF, "event"
// names the event's type, "id" sets the last event ID (unless it holds a NUL), "retry" the
// reconnection delay; lines that begin with a colon are comments, other fields are ignored;
// a byte order mark at the start of the stream is skipped. An event that the stream ends
// before its blank line is never dispatched. The transport's stream (spec 2025-11-25,
// Transports, Streamable HTTP) is read this way.
//
// Its one buffer holds a whole event, so that an event's fields are slices of it: an event
// costs no allocation beyond its type and ID when they change. The buffer comes from a pool
// and goes back to it on release.
type eventReader struct {
	r   io.Reader
	buf []byte // buf[pos:end] is read and not yet dispatched
	pos int
	end int
	// seek is where, from pos, the search for the pending event's end goes on: the lines
	// before it are complete and none is blank.
	seek   int
	max    int    // the largest event, in bytes; a longer one fails with bufio.ErrTooLong
	err    error  // what ended the input (io.EOF at its end), once a read returned it
	bomOff bool   // the start of the stream was checked for a byte order mark
	lastID []byte // the last event ID, in idBuf unless longer (IDs change every event)
	idBuf  [32]byte
	data   []byte        // the data lines of an event that has more than one, joined
	cur    *streamCursor // when not nil, takes the retry fields
}

// readEvent is one dispatched event. lastID and data are valid until the reader's next call.
type readEvent struct {
	lastID []byte // the last event ID of the stream: this event's, or an earlier one's
	typ    string // the event's type: empty when it has none
	data   []byte
}

// eventBufSize is the size of a reader's first buffer, enough for the events of most answers.
const eventBufSize = 4 << 10

// eventBufs holds the buffers of released readers, up to eventBufKeep bytes each.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, eventBufSize); return &b }}

const eventBufKeep = 64 << 10

// newEventReader returns a reader of the events of r, which fails on an event longer than max
// bytes (all of it, its line ends included); cur, when not nil, takes the retry fields.
func newEventReader(r io.Reader, max int, cur *streamCursor) *eventReader {
	s := &eventReader{}
	s.reset(r, max, cur)
	return s
}

// reset makes s a new reader of r, keeping its buffer.
func (s *eventReader) reset(r io.Reader, max int, cur *streamCursor) {
	buf, data := s.buf, s.data
	if buf == nil {
		buf = *eventBufs.Get().(*[]byte)
	}
	*s = eventReader{r: r, buf: buf, max: max, cur: cur, data: data[:0]}
	s.lastID = s.idBuf[:0]
}

// release gives the reader's buffer back to the pool; s is not used after it.
func (s *eventReader) release() {
	if s.buf != nil && cap(s.buf) <= eventBufKeep {
		b := s.buf[:cap(s.buf)]
		eventBufs.Put(&b)
	}
	s.buf, s.data = nil, nil
}

// next returns the next event of the stream. At the stream's end it returns io.EOF, a
// read's error when a read failed, or bufio.ErrTooLong for an event over the limit.
func (s *eventReader) next() (readEvent, error) {
	for {
		if n, ok := s.findEvent(); ok {
			if n > s.max {
				return readEvent{}, bufio.ErrTooLong
			}
			ev, dispatch := s.parseEvent(s.buf[s.pos : s.pos+n])
			s.pos += n
			s.seek = 0
			if dispatch {
				return ev, nil
			}
			continue
		}
		if s.err != nil {
			return readEvent{}, s.err
		}
		if err := s.fill(); err != nil {
			return readEvent{}, err
		}
	}
}

// findEvent looks for the end of the pending event: the line end of its blank line. It
// returns the event's length from pos, blank line included.
func (s *eventReader) findEvent() (int, bool) {
	if !s.bomOff {
		if s.end-s.pos < 3 && s.err == nil && bytes.HasPrefix([]byte("\xEF\xBB\xBF"), s.buf[s.pos:s.end]) {
			return 0, false // too short yet to tell
		}
		if bytes.HasPrefix(s.buf[s.pos:s.end], []byte("\xEF\xBB\xBF")) {
			s.pos += 3
		}
		s.bomOff = true
	}
	b := s.buf[s.pos:s.end]
	atEOF := s.err != nil
	for i := s.seek; ; {
		j := bytes.IndexAny(b[i:], "\r\n")
		if j < 0 {
			s.seek = i
			return 0, false
		}
		k := i + j
		eol := 1
		if b[k] == '\r' {
			switch {
			case k+1 < len(b):
				if b[k+1] == '\n' {
					eol = 2
				}
			case !atEOF:
				s.seek = i // CR at the end of what was read: CR LF, or a CR alone?
				return 0, false
			}
		}
		if k == i {
			return k + eol, true
		}
		i = k + eol
	}
}

// fill reads more of the stream after what is pending, moving it to the start of the buffer
// or growing the buffer, within the limit, when there is no room after it.
func (s *eventReader) fill() error {
	pending := s.end - s.pos
	if pending >= s.max {
		return bufio.ErrTooLong // and not one complete event in it
	}
	if s.end == len(s.buf) {
		if s.pos == 0 {
			size := min(max(2*len(s.buf), eventBufSize), s.max)
			nb := make([]byte, size)
			copy(nb, s.buf[:s.end])
			s.buf = nb
		} else {
			copy(s.buf, s.buf[s.pos:s.end])
			s.pos, s.end = 0, pending
		}
	}
	for range 100 { // a Read may return no bytes and no error; not forever
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.err = err
			return nil
		}
		if n > 0 {
			return nil
		}
	}
	s.err = io.ErrNoProgress
	return nil
}

// parseEvent reads the fields of one event, ev (its lines, the blank one last), and reports
// whether it is dispatched: when it had a data, event or id field.
func (s *eventReader) parseEvent(ev []byte) (readEvent, bool) {
	var out readEvent
	var data []byte
	lines, dirty := 0, false
	for len(ev) > 0 {
		var line []byte
		line, ev = nextEventLine(ev)
		if len(line) == 0 || line[0] == ':' {
			continue // the blank line that ends the event, or a comment
		}
		name, value := splitEventField(line)
		switch string(name) {
		case "data":
			dirty = true
			lines++
			data = s.appendData(lines, data, value)
		case "event":
			dirty = true
			out.typ = eventType(value)
		case "id":
			if bytes.IndexByte(value, 0) >= 0 {
				break
			}
			dirty = true
			s.lastID = append(s.lastID[:0], value...)
		case "retry":
			s.setRetry(value)
		}
	}
	out.lastID, out.data = s.lastID, data
	return out, dirty
}

// nextEventLine cuts the first line, ended by CR, LF or CRLF, from ev, which ends with a line
// end.
func nextEventLine(ev []byte) (line, rest []byte) {
	i := bytes.IndexAny(ev, "\r\n")
	line = ev[:i]
	if ev[i] == '\r' && i+1 < len(ev) && ev[i+1] == '\n' {
		i++
	}
	return line, ev[i+1:]
}

// splitEventField splits a field line at its first colon, dropping one space after it; a line
// without a colon is a field name with an empty value.
func splitEventField(line []byte) (name, value []byte) {
	c := bytes.IndexByte(line, ':')
	if c < 0 {
		return line, line[len(line):]
	}
	name, value = line[:c], line[c+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return name, value
}

// appendData adds the value of an event's nth data field to its data so far: the first is used
// in place, the next ones are joined with newlines in the reader's buffer.
func (s *eventReader) appendData(n int, data, value []byte) []byte {
	switch n {
	case 1:
		return value
	case 2:
		s.data = append(append(append(s.data[:0], data...), '\n'), value...)
	default:
		s.data = append(append(s.data, '\n'), value...)
	}
	return s.data
}

// eventType is an event field's value as a string, without allocating for the common ones.
func eventType(value []byte) string {
	switch string(value) {
	case "":
		return ""
	case "message":
		return "message"
	}
	return string(value)
}

// setRetry applies a retry field: a reconnection delay in milliseconds for the current stream.
func (s *eventReader) setRetry(value []byte) {
	if ms, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64); err == nil && ms >= 0 && s.cur != nil {
		s.cur.retry = time.Duration(ms) * time.Millisecond
	}
}
