package main

import (
	"context"
	"log/slog"

	"github.com/protomcp/protomcp/runtime"
)

// The client scenarios of MCP 2026-07-28 (the suite's request-metadata, sep-2322-*, http-*
// and json-schema-* client scenarios), registered beside the others.
func init() {
	scenarios["request-metadata"] = runRequestMetadata
}

// modernClient is a client of the 2026-07-28 era that declares sampling, elicitation and roots,
// answering each with a fixed value.
func modernClient(url string, log *slog.Logger, opts ...runtime.ClientOption) *runtime.Client {
	opts = append([]runtime.ClientOption{
		runtime.WithEra(runtime.EraModern),
		runtime.WithSamplingHandler(func(_ context.Context, p *runtime.CreateMessageParams) (*runtime.CreateMessageResult, error) {
			return &runtime.CreateMessageResult{Role: "assistant", Content: runtime.TextContent("a sampled answer"), Model: "conformance-client", StopReason: "endTurn"}, nil
		}),
		runtime.WithElicitationHandler(func(context.Context, *runtime.ElicitParams) (*runtime.ElicitResult, error) {
			return &runtime.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}),
		runtime.WithRootsHandler(func(context.Context) (*runtime.ListRootsResult, error) {
			return &runtime.ListRootsResult{Roots: []runtime.Root{{URI: "file:///conformance", Name: "conformance"}}}, nil
		}),
	}, opts...)
	return newClient(url, log, opts...)
}

// runRequestMetadata connects in the modern era and lists the tools: every request carries
// _meta's protocolVersion, clientInfo and clientCapabilities and the MCP-Protocol-Version
// header, and a first request refused with UnsupportedProtocolVersionError is retried with a
// version from the error's supported list (spec 2026-07-28, Versioning; SEP-2575).
func runRequestMetadata(ctx context.Context, url string, log *slog.Logger) error {
	c := modernClient(url, log)
	defer closeClient(c, log)
	if err := c.Connect(ctx); err != nil {
		return err
	}
	tools, err := c.ListTools(ctx, "")
	if err != nil {
		return err
	}
	log.Info("listed tools", "count", len(tools.Tools), "version", c.ProtocolVersion())
	return nil
}
