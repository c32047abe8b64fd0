package runtime_test

// Prompts, resources and server-streaming tools generated from proto, driven end to end on
// loopback through the generated weather code (gen/weather/v1/weatherv1mcp) and the raw
// client, in both server answer modes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/protomcp/protomcp/examples/weather"
	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	weatherv1 "github.com/protomcp/protomcp/gen/weather/v1"
	"github.com/protomcp/protomcp/gen/weather/v1/weatherv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

var surfaceNow = time.Date(2025, 6, 1, 9, 30, 0, 0, time.UTC)

// surfaceEnv serves h through the generated Register function and returns a generated
// client and the raw one. The client speaks the era of surfaceEra (default: whichever the
// server offers, the stateless 2026-07-28).
func surfaceEnv(t *testing.T, h weatherv1mcp.WeatherServiceHandler, opts ...runtime.ServerOption) (*clientEnv, weatherv1mcp.WeatherServiceClient, *runtime.Client) {
	t.Helper()
	e := newClientEnv(t, opts...)
	weatherv1mcp.RegisterWeatherServiceHandler(e.srv, h)
	c := e.client(t, runtime.WithEra(surfaceEra(t)))
	return e, weatherv1mcp.NewWeatherServiceClient(c), c
}

// surfaceEra is EraLegacy in subtests named "legacy" (see eras), EraAuto otherwise.
func surfaceEra(t *testing.T) runtime.Era {
	if strings.Contains(t.Name(), "/legacy") {
		return runtime.EraLegacy
	}
	return runtime.EraAuto
}

// eras runs f in the stateless era and in the session era.
func eras(t *testing.T, f func(t *testing.T)) {
	t.Run("modern", f)
	t.Run("legacy", f)
}

func TestPromptFromProto(t *testing.T) {
	eras(t, func(t *testing.T) {
		serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
			leaks := goleak.IgnoreCurrent()
			var gets atomic.Int32 // the prompts/get requests the server received
			opts = append(opts, runtime.WithInterceptors(runtime.InterceptorFunc(func(next runtime.CallFunc) runtime.CallFunc {
				return func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
					if req.Method == "prompts/get" {
						gets.Add(1)
					}
					return next(ctx, req)
				}
			})))
			e, client, c := surfaceEnv(t, &weather.Service{Now: func() time.Time { return surfaceNow }}, opts...)
			ctx := testCtx(t)

			list, err := c.ListPrompts(ctx, "")
			require.NoError(t, err)
			want := runtime.Prompt{Name: "plan_trip", Title: "Plan a trip", Description: "Plans a trip: asks the model for a day-by-day plan for an activity, given the forecast.",
				Arguments: []runtime.PromptArgument{
					{Name: "city", Description: "The city to visit.", Required: true},
					{Name: "activity", Description: "What to do there.", Required: true},
					{Name: "days", Description: "How many days the trip lasts, 1 to 14. Defaults to 3."},
				},
				Meta: map[string]any{runtime.RPCMetaKey: "weather.v1.WeatherService/PlanTrip"}}
			require.Equal(t, []runtime.Prompt{want}, list.Prompts, "prompts/list")

			res, err := client.PlanTrip(ctx, &weatherv1.PlanTripRequest{City: "Paris", Activity: weatherv1.Activity_ACTIVITY_HIKING, Days: 2})
			require.NoError(t, err)
			direct, err := (&weather.Service{Now: func() time.Time { return surfaceNow }}).PlanTrip(ctx, &weatherv1.PlanTripRequest{City: "Paris", Activity: weatherv1.Activity_ACTIVITY_HIKING, Days: 2})
			require.NoError(t, err)
			if diff := cmp.Diff(direct, res, protocmp.Transform()); diff != "" {
				require.Fail(t, fmt.Sprintf("PlanTrip through the client (-direct +client):\n%s", diff))
			}
			assert.Contains(t, res.GetMessages()[0].GetContent().GetText().GetText(), "2-day trip to Paris, FR for hiking", "prompt text")

			// The wire form: arguments are strings; the enum by its value name.
			raw, err := c.GetPrompt(ctx, "plan_trip", map[string]string{"city": "Tokyo", "activity": "ACTIVITY_BEACH", "days": "4"})
			require.NoError(t, err)
			if assert.Len(t, raw.Messages, 1, "prompts/get") {
				assert.Equal(t, "user", raw.Messages[0].Role, "prompts/get role")
				assert.Contains(t, raw.Messages[0].Content.Text, "4-day trip to Tokyo, JP for a beach holiday", "prompts/get text")
			}

			for _, tc := range []struct {
				args map[string]string
				want string
			}{
				{map[string]string{"city": "Paris"}, "missing required arguments: activity"},
				{map[string]string{"city": "Paris", "activity": "ACTIVITY_SKIING"}, "activity"},
				{map[string]string{"city": "Paris", "activity": "ACTIVITY_HIKING", "days": "two"}, "days"},
				{map[string]string{"city": "Paris", "activity": "ACTIVITY_HIKING", "budget": "1"}, `unknown argument "budget"`},
			} {
				_, err := c.GetPrompt(ctx, "plan_trip", tc.args)
				assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "prompts/get %v: %v", tc.args, err)
				assert.ErrorContains(t, err, tc.want, "prompts/get %v", tc.args)
			}

			// An open enum's number without a name: the typed client refuses it before
			// sending, in the words the server uses for what it would have sent.
			sent := gets.Load()
			_, err = client.PlanTrip(ctx, &weatherv1.PlanTripRequest{City: "Paris", Activity: weatherv1.Activity(9)})
			assert.Equal(t, runtime.CodeInvalidParams, runtime.CodeOf(err), "PlanTrip with activity 9: %v", err)
			assert.Equal(t, sent, gets.Load(), "the refused prompts/get reached the server")
			_, serverErr := c.GetPrompt(ctx, "plan_trip", map[string]string{"city": "Paris", "activity": "9"})
			var rpcErr *runtime.Error
			if assert.ErrorAs(t, serverErr, &rpcErr, "prompts/get with activity \"9\"") {
				assert.ErrorContains(t, err, rpcErr.Message, "the typed client's refusal is not the server's")
			}
			e.closeAll(t, c, leaks)
		})
	})
}

func complete(t *testing.T, c *runtime.Client, ref runtime.CompleteRef, arg, value string) []string {
	t.Helper()
	raw, err := c.Call(testCtx(t), "completion/complete", map[string]any{"ref": ref, "argument": map[string]string{"name": arg, "value": value}})
	require.NoError(t, err, "completion/complete %s=%q", arg, value)
	var res struct {
		Completion runtime.Completion `json:"completion"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), "completion/complete %s=%q: %s", arg, value, raw)
	return res.Completion.Values
}

func TestCompletionFromProto(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	e, _, c := surfaceEnv(t, &weather.Service{})
	require.NoError(t, c.Connect(testCtx(t)))
	_, caps, _ := c.ServerInfo()
	assert.NotNil(t, caps.Completions, "the server does not declare the completions capability")
	prompt := runtime.CompleteRef{Type: "ref/prompt", Name: "plan_trip"}
	// An enum argument completes from its values, with no code in the handler.
	assert.Equal(t, []string{"ACTIVITY_HIKING", "ACTIVITY_SIGHTSEEING", "ACTIVITY_BEACH"}, complete(t, c, prompt, "activity", ""), "activity completions")
	assert.Equal(t, []string{"ACTIVITY_BEACH"}, complete(t, c, prompt, "activity", "beach"), "activity completions of beach")
	// Other arguments have none, without an error.
	assert.Empty(t, complete(t, c, prompt, "city", "Pa"), "city completions")
	// A prompt the server does not know completes to nothing, since the server declares
	// completions.
	assert.Empty(t, complete(t, c, runtime.CompleteRef{Type: "ref/prompt", Name: "no_such_prompt"}, "x", ""), "completions of an unknown prompt")
	// The template's variable completes through the handler's optional CompleteGetStation.
	station := runtime.CompleteRef{Type: "ref/resource", URI: weatherv1mcp.WeatherServiceGetStationURITemplate}
	assert.Equal(t, []string{"paris-montsouris"}, complete(t, c, station, "id", "pa"), "station id completions")
	e.closeAll(t, c, leaks)
}

func TestResourceTemplateFromProto(t *testing.T) {
	eras(t, func(t *testing.T) {
		serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
			leaks := goleak.IgnoreCurrent()
			svc := &weather.Service{Now: func() time.Time { return surfaceNow }}
			e, client, c := surfaceEnv(t, svc, opts...)
			ctx := testCtx(t)

			list, err := c.ListResourceTemplates(ctx, "")
			require.NoError(t, err)
			want := runtime.ResourceTemplate{URITemplate: "weather://stations/{id}", Name: "station", Title: "Weather station",
				Description: "A weather station: where it is and what it measured last.", MIMEType: "application/json",
				Meta: map[string]any{runtime.RPCMetaKey: "weather.v1.WeatherService/GetStation"}}
			require.Equal(t, []runtime.ResourceTemplate{want}, list.ResourceTemplates, "resources/templates/list")

			got, err := client.GetStation(ctx, &weatherv1.GetStationRequest{Id: "tokyo-otemachi"})
			require.NoError(t, err)
			direct, _ := svc.GetStation(ctx, &weatherv1.GetStationRequest{Id: "tokyo-otemachi"})
			if diff := cmp.Diff(direct, got, protocmp.Transform()); diff != "" {
				require.Fail(t, fmt.Sprintf("GetStation through the client (-direct +client):\n%s", diff))
			}

			// The wire form: a resources/read of the URI, answered with JSON text.
			raw, err := c.ReadResource(ctx, "weather://stations/tokyo-otemachi")
			require.NoError(t, err)
			if assert.Len(t, raw.Contents, 1, "resources/read") {
				assert.Equal(t, "weather://stations/tokyo-otemachi", raw.Contents[0].URI)
				assert.Equal(t, "application/json", raw.Contents[0].MIMEType)
				if assert.NotNil(t, raw.Contents[0].Text, "resources/read text") {
					assert.Contains(t, *raw.Contents[0].Text, `"id":"tokyo-otemachi"`)
				}
			}

			// An id the handler does not know is its error; an id with characters to escape goes
			// to the handler decoded.
			_, err = client.GetStation(ctx, &weatherv1.GetStationRequest{Id: "mars/olympus mons"})
			// (2026-07-28 reports an unknown resource as invalid params.)
			assert.Contains(t, []runtime.Code{runtime.CodeResourceNotFound, runtime.CodeInvalidParams}, runtime.CodeOf(err), "GetStation(unknown): %v", err)
			assert.ErrorContains(t, err, `no station "mars/olympus mons"`)
			// The service's static resource, declared in its options.
			static, err := c.ListResources(ctx, "")
			if assert.NoError(t, err, "resources/list") && assert.Len(t, static.Resources, 1, "resources/list") {
				assert.Equal(t, "weather://about", static.Resources[0].URI)
				assert.Equal(t, "text/markdown", static.Resources[0].MIMEType)
			}
			about, err := c.ReadResource(ctx, "weather://about")
			if assert.NoError(t, err, "resources/read weather://about") && assert.Len(t, about.Contents, 1) && assert.NotNil(t, about.Contents[0].Text) {
				assert.True(t, strings.HasPrefix(*about.Contents[0].Text, "# Weather\n"), "resources/read weather://about: %q", *about.Contents[0].Text)
			}
			// A variable left empty cannot make a URI.
			_, err = client.GetStation(ctx, &weatherv1.GetStationRequest{})
			assert.ErrorContains(t, err, `field "id" is empty`, "GetStation(empty)")
			e.closeAll(t, c, leaks)
		})
	})
}

func TestStreamingToolFromProto(t *testing.T) {
	eras(t, func(t *testing.T) {
		serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
			leaks := goleak.IgnoreCurrent()
			e, client, c := surfaceEnv(t, &weather.Service{Now: func() time.Time { return surfaceNow }}, opts...)
			ctx := testCtx(t)

			var progress []runtime.ProgressParams
			var mu sync.Mutex
			days := int32(5)
			var got []*weatherv1.ExportForecastResponse
			for msg, err := range client.ExportForecast(ctx, &weatherv1.ExportForecastRequest{City: "Berlin", Days: &days}, runtime.WithProgress(func(p *runtime.ProgressParams) {
				mu.Lock()
				progress = append(progress, *p)
				mu.Unlock()
			})).All() {
				require.NoError(t, err)
				got = append(got, msg)
			}
			require.Len(t, got, 5, "messages")
			mu.Lock()
			assert.Len(t, progress, 5, "notifications the caller's WithProgress saw")
			progress = nil
			mu.Unlock()
			for i, m := range got {
				assert.Equal(t, int32(i+1), m.GetProgress(), "message %d progress", i)
				assert.Equal(t, int32(5), m.GetTotal(), "message %d total", i)
				assert.Equal(t, surfaceNow.AddDate(0, 0, i).Format(time.DateOnly), m.GetDay().GetDate(), "message %d date", i)
			}

			// The wire form: one progress notification per message, with the message in _meta,
			// and the last message as the result.
			raw, err := c.CallTool(ctx, weatherv1mcp.WeatherServiceExportForecastToolName, json.RawMessage(`{"city":"Berlin","days":3}`),
				runtime.WithProgress(func(p *runtime.ProgressParams) {
					mu.Lock()
					progress = append(progress, *p)
					mu.Unlock()
				}))
			require.NoError(t, err)
			mu.Lock()
			progress = slices.Clone(progress)
			mu.Unlock()
			require.Len(t, progress, 3, "progress notifications: %+v", progress)
			for i, p := range progress {
				var m weatherv1.ExportForecastResponse
				assert.NoError(t, json.Unmarshal(p.Meta[runtime.MetaStreamSeq], new(int)), "notification %d: %s", i, runtime.MetaStreamSeq)
				require.NoError(t, protojsonUnmarshal(p.Meta[runtime.MetaStreamMessage], &m), "notification %d", i)
				assert.Equal(t, float64(i+1), p.Progress, "notification %d progress", i)
				if assert.NotNil(t, p.Total, "notification %d total", i) {
					assert.Equal(t, float64(3), *p.Total, "notification %d total", i)
				}
				assert.Equal(t, "exported "+m.GetDay().GetDate(), p.Message, "notification %d message", i)
				assert.Equal(t, int32(i+1), m.GetProgress(), "notification %d: progress of its message", i)
			}
			var last weatherv1.ExportForecastResponse
			if assert.NoError(t, protojsonUnmarshal(raw.StructuredContent, &last), "result %s", raw.StructuredContent) {
				assert.Equal(t, int32(3), last.GetProgress(), "result %s", raw.StructuredContent)
			}
			if assert.Contains(t, raw.Meta, runtime.MetaStreamCount, "result _meta") {
				assert.Equal(t, "3", fmt.Sprint(raw.Meta[runtime.MetaStreamCount]), "result _meta %s", runtime.MetaStreamCount)
			}
			e.closeAll(t, c, leaks)
		})
	})
}

// gatedExport streams n messages; with step set, it sends one message per receive on step,
// and it records how its handler ended.
type gatedExport struct {
	weatherv1mcp.UnimplementedWeatherServiceHandler
	n        int
	step     chan struct{}
	sentAll  chan struct{}
	ended    chan error
	handlers atomic.Int32
}

func (g *gatedExport) ExportForecast(ctx context.Context, _ *weatherv1.ExportForecastRequest, stream *runtime.ServerStream[weatherv1.ExportForecastResponse]) error {
	g.handlers.Add(1)
	err := func() error {
		for i := range g.n {
			if g.step != nil {
				select {
				case <-g.step:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if err := stream.Send(&weatherv1.ExportForecastResponse{Progress: int32(i + 1), Total: int32(g.n), Message: fmt.Sprint("step ", i+1)}); err != nil {
				return err
			}
		}
		if g.sentAll != nil {
			close(g.sentAll)
		}
		return nil
	}()
	g.ended <- err
	return err
}

// A consumer that reads nothing until the handler has sent every message gets them all, in
// order: the client's bounded buffer holds the reading back, and nothing is dropped.
func TestStreamingToolSlowConsumer(t *testing.T) {
	eras(t, func(t *testing.T) {
		serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
			leaks := goleak.IgnoreCurrent()
			const n = 10 * runtime.StreamBuffer
			h := &gatedExport{n: n, sentAll: make(chan struct{}), ended: make(chan error, 1)}
			e, client, c := surfaceEnv(t, h, opts...)
			ctx := testCtx(t)

			stream := client.ExportForecast(ctx, &weatherv1.ExportForecastRequest{City: "Paris"})
			select {
			case <-h.sentAll:
			case <-ctx.Done():
				require.Fail(t, "the handler did not send every message while the consumer was not reading")
			}
			for i := range n {
				m, err := stream.Recv()
				require.NoErrorf(t, err, "Recv %d", i)
				require.Falsef(t, m.GetProgress() != int32(i+1), "message %d has progress %d: lost or reordered", i, m.GetProgress())
			}
			if m, err := stream.Recv(); !errors.Is(err, io.EOF) {
				require.Fail(t, fmt.Sprintf("after %d messages: %v, %v; want io.EOF", n, m, err))
			}
			if err := <-h.ended; err != nil {
				assert.Fail(t, fmt.Sprintf("handler: %v", err))
			}
			e.closeAll(t, c, leaks)
		})
	})
}

// A consumer that stops midway (by breaking out of the loop, or by cancelling its context)
// cancels the call: the handler's context ends, the stream ends at once, and nothing leaks.
func TestStreamingToolCancelMidway(t *testing.T) {
	for _, how := range []string{"break", "cancel"} {
		t.Run(how, func(t *testing.T) {
			eras(t, func(t *testing.T) {
				serverModes(t, func(t *testing.T, opts ...runtime.ServerOption) {
					leaks := goleak.IgnoreCurrent()
					h := &gatedExport{n: 100, step: make(chan struct{}), ended: make(chan error, 1)}
					e, client, c := surfaceEnv(t, h, opts...)
					ctx, cancel := context.WithCancel(testCtx(t))
					defer cancel()

					stream := client.ExportForecast(ctx, &weatherv1.ExportForecastRequest{City: "Paris"})
					h.step <- struct{}{}
					var got []int32
					for m, err := range stream.All() {
						if err != nil {
							if how == "cancel" && errors.Is(err, context.Canceled) {
								break
							}
							require.Fail(t, fmt.Sprintf("after %v: %v", got, err))
						}
						got = append(got, m.GetProgress())
						if len(got) == 3 {
							if how == "break" {
								break
							}
							cancel()
							continue
						}
						h.step <- struct{}{}
					}
					assert.Equal(t, []int32{1, 2, 3}, got)
					// The server saw notifications/cancelled: the handler's context ended while it
					// waited to send message 4.
					assert.ErrorIs(t, <-h.ended, context.Canceled, "how the handler ended")
					if m, err := stream.Recv(); m != nil || err == nil || errors.Is(err, io.EOF) {
						assert.Fail(t, fmt.Sprintf("Recv after the end = %v, %v; want the cancellation", m, err))
					}
					e.closeAll(t, c, leaks)
				})
			})
		})
	}
}

// rpcs that only the embedded Unimplemented handler serves are not offered.
func TestUnimplementedRPCsAreNotListed(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	h := &gatedExport{n: 1, ended: make(chan error, 1)}
	e, _, c := surfaceEnv(t, h)
	ctx := testCtx(t)
	var tools []string
	for tool, err := range c.Tools(ctx) {
		require.NoError(t, err)
		tools = append(tools, tool.Name)
	}
	assert.Equal(t, []string{weatherv1mcp.WeatherServiceExportForecastToolName}, tools, "tools/list: only the implemented export_forecast")
	prompts, err := c.ListPrompts(ctx, "")
	if assert.NoError(t, err, "prompts/list") {
		assert.Empty(t, prompts.Prompts, "prompts/list")
	}
	templates, err := c.ListResourceTemplates(ctx, "")
	if assert.NoError(t, err, "resources/templates/list") {
		assert.Empty(t, templates.ResourceTemplates, "resources/templates/list")
	}
	require.NoError(t, c.Connect(ctx))
	_, caps, _ := c.ServerInfo()
	assert.Nil(t, caps.Completions, "completions declared with no prompt or template to complete")
	e.closeAll(t, c, leaks)
}

func TestPromptResultConversions(t *testing.T) {
	t.Parallel()
	in := &mcpv1.PromptResult{Description: "d", Messages: []*mcpv1.PromptMessage{
		{Role: mcpv1.Role_ROLE_ASSISTANT, Content: &mcpv1.Content{Kind: &mcpv1.Content_Image{Image: &mcpv1.ImageContent{Data: []byte{1, 2}, MimeType: "image/png"}}}},
		{Content: &mcpv1.Content{Kind: &mcpv1.Content_Text{Text: &mcpv1.TextContent{Text: "t"}}}},
	}}
	wire, err := runtime.PromptResultFromProto(in)
	require.NoError(t, err)
	require.Len(t, wire.Messages, 2)
	assert.Equal(t, "assistant", wire.Messages[0].Role)
	assert.Equal(t, "image", wire.Messages[0].Content.Type)
	assert.Equal(t, "user", wire.Messages[1].Role, "the role of a message without one")
	back, err := runtime.PromptResultToProto(wire)
	require.NoError(t, err)
	in.Messages[1].Role = mcpv1.Role_ROLE_USER
	if diff := cmp.Diff(in, back, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("round trip (-want +got):\n%s", diff))
	}
}

func TestExpandURITemplate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tmpl string
		msg  proto.Message
		want string
	}{
		{"weather://stations/{id}", &weatherv1.GetStationRequest{Id: "a b/c?d"}, "weather://stations/a%20b%2Fc%3Fd"},
		{"weather://stations/{id}/today", &weatherv1.GetStationRequest{Id: "x"}, "weather://stations/x/today"},
		{"weather://about", nil, "weather://about"},
	} {
		got, err := runtime.ExpandURITemplate(tc.tmpl, tc.msg)
		assert.Falsef(t, err != nil || got != tc.want, "ExpandURITemplate(%q, %v) = %q, %v; want %q", tc.tmpl, tc.msg, got, err, tc.want)
	}
}

func protojsonUnmarshal(b []byte, m proto.Message) error { return protojson.Unmarshal(b, m) }

// Over stdio too, a slow consumer loses nothing and a consumer that stops cancels the call.
func TestStreamingToolOverStdio(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	const n = 4 * runtime.StreamBuffer
	h := &gatedExport{n: n, sentAll: make(chan struct{}), ended: make(chan error, 1)}
	srv := newStdioServer()
	weatherv1mcp.RegisterWeatherServiceHandler(srv, h)
	c, done := stdioPair(t, srv)
	client := weatherv1mcp.NewWeatherServiceClient(c)
	ctx := testCtx(t)

	stream := client.ExportForecast(ctx, &weatherv1.ExportForecastRequest{City: "Paris"})
	select {
	case <-h.sentAll:
	case <-ctx.Done():
		require.Fail(t, "the handler did not send every message while the consumer was not reading")
	}
	var got []int32
	for m, err := range stream.All() {
		require.NoError(t, err)
		got = append(got, m.GetProgress())
	}
	want := make([]int32, n)
	for i := range want {
		want[i] = int32(i + 1)
	}
	assert.Equal(t, want, got, "messages' progress")
	<-h.ended

	h.n, h.step, h.sentAll = 100, make(chan struct{}), nil
	stream = client.ExportForecast(ctx, &weatherv1.ExportForecastRequest{City: "Paris"})
	h.step <- struct{}{}
	if m, err := stream.Recv(); err != nil || m.GetProgress() != 1 {
		require.Fail(t, fmt.Sprintf("Recv = %v, %v", m, err))
	}
	stream.Close()
	assert.ErrorIs(t, <-h.ended, context.Canceled, "how the handler ended")
	assert.NoError(t, c.Close(ctx), "close")
	waitServer(t, done)
	goleak.VerifyNone(t, leaks)
}

// Hand-registered typed prompts decode every scalar kind from the string arguments, and
// refuse what cannot be a prompt argument.
func TestTypedPromptArgumentKinds(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	e := newClientEnv(t)
	var got *mcpv1.ResourceLink
	runtime.AddTypedPrompt(e.srv, runtime.PromptSpec{Name: "link", Arguments: []runtime.PromptArgument{{Name: "uri", Required: true}, {Name: "size"}, {Name: "mimeType"}}},
		func(_ context.Context, req *mcpv1.ResourceLink) (*mcpv1.PromptResult, error) {
			got = req
			return &mcpv1.PromptResult{}, nil
		})
	runtime.AddTypedPrompt(e.srv, runtime.PromptSpec{Name: "result"}, func(_ context.Context, req *mcpv1.ToolResult) (*mcpv1.PromptResult, error) {
		return &mcpv1.PromptResult{Description: fmt.Sprint(req.GetIsError())}, nil
	})
	c := e.client(t)
	ctx := testCtx(t)

	// The typed client sends a message's set fields as strings, by JSON name.
	size := int64(1234567890123)
	_, err := runtime.GetTypedPrompt(ctx, c, "link", &mcpv1.ResourceLink{Uri: "a://b", Size: &size, MimeType: "text/plain"})
	require.NoError(t, err)
	if diff := cmp.Diff(&mcpv1.ResourceLink{Uri: "a://b", Size: &size, MimeType: "text/plain"}, got, protocmp.Transform()); diff != "" {
		assert.Fail(t, fmt.Sprintf("the handler got (-want +got):\n%s", diff))
	}
	// The proto name works too; a number that is not one is refused, naming the argument.
	if _, err := c.GetPrompt(ctx, "link", map[string]string{"uri": "a://b", "mime_type": "x/y"}); err != nil || got.GetMimeType() != "x/y" {
		assert.Fail(t, fmt.Sprintf("proto name: %v, %v", got, err))
	}
	if _, err := c.GetPrompt(ctx, "link", map[string]string{"uri": "a://b", "size": "big"}); err == nil || !strings.Contains(err.Error(), "size") {
		assert.Fail(t, fmt.Sprintf("size=big: %v", err))
	}
	for value, want := range map[string]string{"true": "true", "false": "false"} {
		res, err := c.GetPrompt(ctx, "result", map[string]string{"isError": value})
		assert.Falsef(t, err != nil || res.Description != want, "isError=%s: %+v, %v", value, res, err)
	}
	for args, want := range map[string]string{`{"isError":"yes"}`: "want true or false", `{"content":"x"}`: `unknown argument "content"`} {
		var m map[string]string
		_ = json.Unmarshal([]byte(args), &m)
		if _, err := c.GetPrompt(ctx, "result", m); err == nil || !strings.Contains(err.Error(), want) {
			assert.Fail(t, fmt.Sprintf("%s: %v, want an error mentioning %q", args, err, want))
		}
	}
	e.closeAll(t, c, leaks)
}

// The progress of a streamed message must increase, as for NotifyProgress; a handler that
// breaks the rule gets an error from Send, and the call fails with it.
func TestStreamProgressMustIncrease(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	e := newClientEnv(t)
	sendErr := make(chan error, 1)
	runtime.AddStreamTool(e.srv, runtime.ToolSpec{Name: "down"}, func(_ context.Context, _ *weatherv1.ExportForecastRequest, st *runtime.ServerStream[weatherv1.ExportForecastResponse]) error {
		if err := st.Send(&weatherv1.ExportForecastResponse{Progress: 2}); err != nil {
			return err
		}
		err := st.Send(&weatherv1.ExportForecastResponse{Progress: 1})
		sendErr <- err
		return err
	})
	c := e.client(t)
	stream := runtime.CallToolStream[weatherv1.ExportForecastResponse](testCtx(t), c, "down", &weatherv1.ExportForecastRequest{})
	var got []int32
	var final error
	for m, err := range stream.All() {
		if err != nil {
			final = err
			break
		}
		got = append(got, m.GetProgress())
	}
	assert.ErrorContains(t, <-sendErr, "progress must increase", "Send")
	assert.Equal(t, []int32{2}, got, "messages before the error")
	var te *runtime.ToolError
	assert.ErrorAs(t, final, &te, "the call's error")
	assert.ErrorContains(t, final, "progress must increase", "the call's error")
	e.closeAll(t, c, leaks)
}
