package runtime

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"
)

// eventsOf reads every event of r with an eventReader, and the error that ended them (nil
// at the stream's end).
func eventsOf(r io.Reader, max int) ([][3]string, error) {
	er := newEventReader(r, max, nil)
	defer er.release()
	var out [][3]string
	for {
		ev, err := er.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, [3]string{string(ev.lastID), ev.typ, string(ev.data)})
	}
}

// goSSEEventsOf reads the events of b with go-sse's Read, the reader the client used before
// its own.
func goSSEEventsOf(b []byte) ([][3]string, error) {
	var out [][3]string
	for ev, err := range sse.Read(bytes.NewReader(b), &sse.ReadConfig{MaxEventSize: 1 << 20}) {
		if err != nil {
			return out, err
		}
		out = append(out, [3]string{ev.LastEventID, ev.Type, ev.Data})
	}
	return out, nil
}

// FuzzEventReader reads the same stream with the client's event reader, whole and one byte
// at a time (every line end split across reads), and with go-sse's Read: the events must
// be the same.
func FuzzEventReader(f *testing.F) {
	for _, s := range []string{
		"id: 1_0\nretry: 1000\ndata: \n\nevent: message\nid: 1_1\ndata: {\"a\":1}\n\n",
		"data: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\r",
		"\xEF\xBB\xBFdata: bom\n\n",
		"\xEF\xBB\xBF\xEF\xBB\xBFdata: two boms\n\n",
		": comment\n\nevent: other\ndata: x\n\nid\ndata\n\n",
		"id: \x00\ndata: {}\n\nid: 7\n\ndata:x",
		"\n\n\r\r\r\n\r\ndata:  two spaces\nfoo: bar\ndata\n\n",
		"data: a\n\ndata: b\n",
		"event: e\nretry: 5\n\nretry: 6\n\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := goSSEEventsOf(b)
		require.NoError(t, wantErr)
		got, err := eventsOf(bytes.NewReader(b), 1<<20)
		require.NoError(t, err)
		require.Equal(t, want, got, "read whole")
		got, err = eventsOf(iotest.OneByteReader(bytes.NewReader(b)), 1<<20)
		require.NoError(t, err)
		require.Equal(t, want, got, "read a byte at a time")
	})
}

// An event longer than the limit fails with bufio.ErrTooLong (the client's reason not to
// resume), however it arrives; the events before it are read, and one at the limit passes.
func TestEventReaderLimit(t *testing.T) {
	t.Parallel()
	small := "data: " + strings.Repeat("x", 50) + "\n\n" // 58 bytes
	for _, r := range []func(string) io.Reader{
		func(s string) io.Reader { return strings.NewReader(s) },
		func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	} {
		got, err := eventsOf(r(small+small+"data: "+strings.Repeat("y", 100)+"\n\n"+small), 58)
		require.ErrorIs(t, err, bufio.ErrTooLong)
		assert.Len(t, got, 2)
		got, err = eventsOf(r(small+small), 58)
		require.NoError(t, err)
		assert.Len(t, got, 2)
	}
	// A long event grows the buffer past its first size, within the limit.
	big := "data: " + strings.Repeat("z", 3*eventBufSize) + "\n\n"
	got, err := eventsOf(iotest.HalfReader(strings.NewReader(small+big+small)), len(big))
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, strings.Repeat("z", 3*eventBufSize), got[1][2])
}

// A read error ends the events with that error; a reader that never returns bytes ends them
// with io.ErrNoProgress rather than spinning.
func TestEventReaderErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	got, err := eventsOf(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)), 1<<10)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, [][3]string{{"", "", "a"}}, got)
	_, err = eventsOf(zeroReader{}, 1<<10)
	require.ErrorIs(t, err, io.ErrNoProgress)
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// retry fields set the cursor's reconnection delay, whether or not their event is
// dispatched; a negative or unreadable one is ignored.
func TestEventReaderRetry(t *testing.T) {
	t.Parallel()
	cur := &streamCursor{retry: time.Second}
	er := newEventReader(strings.NewReader("retry: 250\n\nretry: -1\nretry: x\ndata: a\n\n"), 1<<10, cur)
	defer er.release()
	ev, err := er.next()
	require.NoError(t, err)
	assert.Equal(t, "a", string(ev.data))
	assert.Equal(t, 250*time.Millisecond, cur.retry)
}
