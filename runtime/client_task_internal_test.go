package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestTaskPollBounds checks the interval the client waits between polls of a task: the
// server's suggestion, within [minTaskPoll, maxTaskPoll], the default when it gives none. A
// server suggesting years must not make Wait sleep past the task's end for years.
func TestTaskPollBounds(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		task wireTask
		want time.Duration
	}{
		{wireTask{}, defaultTaskPoll},
		{wireTask{PollInterval: ms(2500)}, 2500 * time.Millisecond},
		{wireTask{PollIntervalMs: ms(1)}, minTaskPoll},
		{wireTask{PollIntervalMs: ms(1e12)}, maxTaskPoll},
		{wireTask{PollInterval: ms(1e300)}, maxTaskPoll},
	} {
		assert.Equal(t, c.want, c.task.pollEvery(), "%+v", c.task)
	}
}
