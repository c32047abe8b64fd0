package weather_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/protomcp/protomcp/examples/weather"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

// The climate report as a task, end to end: the generated client's Start... against the
// runtime's own task runner, in both eras. The handle has an ID, its status moves from
// working to completed, Wait gives what the handler returns; a cancelled task ends cancelled
// and its Wait says so; in 2026-07-28, which keeps no session, a second client resumes the
// task by its ID.
func TestClimateReportTaskEndToEnd(t *testing.T) {
	t.Parallel()
	for _, era := range []runtime.Era{runtime.EraLegacy, runtime.EraModern} {
		t.Run(fmt.Sprint(era), func(t *testing.T) {
			t.Parallel()
			serve := func(step time.Duration) string {
				srv := runtime.NewServer(runtime.Implementation{Name: "weather-test", Version: "0"}, runtime.WithEra(era))
				weatherv1mcp.RegisterWeatherServiceHandler(srv, &weather.Service{Now: func() time.Time { return fixedNow }, ReportStep: step})
				hs := httptest.NewServer(srv)
				t.Cleanup(hs.Close)
				return hs.URL
			}
			newClient := func(url string) weatherv1mcp.WeatherServiceClient {
				c := runtime.NewClient(url, runtime.WithEra(era))
				t.Cleanup(func() { _ = c.Close(context.Background()) })
				return weatherv1mcp.NewWeatherServiceClient(c)
			}
			quick := serve(20 * time.Millisecond)
			client := newClient(quick)
			ctx := testCtx(t)

			years := int32(5)
			req := &weatherv1.GetClimateReportRequest{City: "Oslo", Years: &years}
			want, err := (&weather.Service{Now: func() time.Time { return fixedNow }}).GetClimateReport(ctx, req)
			require.NoError(t, err)

			h, err := client.StartGetClimateReport(ctx, req)
			require.NoError(t, err)
			require.NotEmpty(t, h.ID(), "the server runs the report as a task")
			info, err := h.Status(ctx)
			require.NoError(t, err)
			assert.Contains(t, []runtime.TaskStatus{runtime.TaskWorking, runtime.TaskCompleted}, info.Status)
			got, err := h.Wait(ctx)
			require.NoError(t, err)
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				assert.Fail(t, fmt.Sprintf("Wait (-handler +task):\n%s", diff))
			}
			info, err = h.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, runtime.TaskCompleted, info.Status)

			if era == runtime.EraModern {
				again, err := newClient(quick).ResumeGetClimateReport(h.ID()).Wait(ctx)
				require.NoError(t, err, "a second client resumes the task by its ID")
				assert.Empty(t, cmp.Diff(want, again, protocmp.Transform()))
			}

			// A year an hour: the task is working whenever the cancel arrives.
			ten := int32(10)
			slow, err := newClient(serve(time.Hour)).StartGetClimateReport(ctx, &weatherv1.GetClimateReportRequest{City: "Lima", Years: &ten}, runtime.WithTaskTTL(time.Minute))
			require.NoError(t, err)
			require.NotEmpty(t, slow.ID())
			require.NoError(t, slow.Cancel(ctx))
			_, err = slow.Wait(ctx)
			require.Error(t, err, "a cancelled task's Wait")
			assert.Equal(t, runtime.CodeRequestCancelled, runtime.CodeOf(err), "%v", err)
			info, err = slow.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, runtime.TaskCancelled, info.Status)
		})
	}
}
