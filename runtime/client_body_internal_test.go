package runtime

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadResponseBody checks the client's read of a JSON answer: a body of known size is read
// into one buffer and then to its end; one that disagrees with its Content-Length, or is larger
// than the limit, is an error.
func TestReadResponseBody(t *testing.T) {
	t.Parallel()
	const body = `{"jsonrpc":"2.0","id":1,"result":{}}`
	n := int64(len(body))
	for _, tc := range []struct {
		name    string
		r       io.Reader
		size    int64
		max     int64
		want    string
		wantErr string
	}{
		{name: "known size", r: strings.NewReader(body), size: n, max: 1 << 20, want: body},
		{name: "known size, one byte at a time", r: iotest.OneByteReader(strings.NewReader(body)), size: n, max: 1 << 20, want: body},
		{name: "data with EOF", r: iotest.DataErrReader(strings.NewReader(body)), size: n, max: 1 << 20, want: body},
		{name: "unknown size", r: strings.NewReader(body), size: -1, max: 1 << 20, want: body},
		{name: "size zero: unknown to some RoundTrippers", r: strings.NewReader(body), size: 0, max: 1 << 20, want: body},
		{name: "longer than its Content-Length", r: strings.NewReader(body + "x"), size: n, max: 1 << 20, wantErr: "longer than its Content-Length"},
		{name: "shorter than its Content-Length", r: strings.NewReader(body), size: n + 1, max: 1 << 20, wantErr: "unexpected EOF"},
		{name: "Content-Length over the limit", r: strings.NewReader(body), size: n, max: n - 1, wantErr: "response larger than"},
		{name: "unknown size over the limit", r: strings.NewReader(body), size: -1, max: n - 1, wantErr: "response larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &eofReader{r: tc.r}
			got, err := readResponseBody(r, tc.size, tc.max)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			if tc.size > 0 {
				assert.Equal(t, int(tc.size), cap(got), "one buffer of the Content-Length")
			}
			assert.True(t, r.eof, "the body was read to its end: the transport reuses the connection at EOF")
		})
	}
}

// eofReader records whether its reader returned io.EOF.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

// TestStreamReaderDrainLimit checks the drain's byte limit: reads stop exactly at it, even with
// a buffer larger than what is left (io.Discard reads 8 KiB at a time), and a read at the
// limit fails with errDrainLimit.
func TestStreamReaderDrainLimit(t *testing.T) {
	t.Parallel()
	sr := &streamReader{r: strings.NewReader(strings.Repeat(": c\n", 10<<10))}
	_, err := io.ReadFull(sr, make([]byte, 100))
	require.NoError(t, err)
	sr.limit = sr.n + 1000
	n, err := io.Copy(io.Discard, sr)
	assert.ErrorIs(t, err, errDrainLimit)
	assert.Equal(t, int64(1000), n, "bytes drained past the first 100")
	assert.Equal(t, int64(1100), sr.n, "bytes read in all")
	assert.False(t, sr.eof, "the reader stopped before the end")

	sr = &streamReader{r: strings.NewReader("data: x\n\n")}
	sr.limit = 1 << 20
	n, err = io.Copy(io.Discard, sr)
	require.NoError(t, err, "a stream that ends within the limit")
	assert.Equal(t, int64(9), n)
	assert.True(t, sr.eof)
}
