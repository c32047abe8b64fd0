package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	mcpv1 "github.com/protomcp/protomcp/gen/mcp/v1"
	"github.com/protomcp/protomcp/internal/protojsonfast"
)

// CallOption configures one call.
type CallOption interface {
	applyCall(*callOptions)
}

type callOptionFunc func(*callOptions)

func (f callOptionFunc) applyCall(o *callOptions) { f(o) }

type callOptions struct {
	onProgress    func(*ProgressParams)
	progressSync  bool // call onProgress on the reading goroutine: a slow one slows the read
	progressToken json.RawMessage
	extraMeta     map[string]json.RawMessage
	timeout       time.Duration
	// Tasks (client_task.go): return a task the call creates rather than wait for it; the
	// lifetime to ask for.
	startTask bool
	taskTTL   time.Duration
}

var progressTokens atomic.Int64

// noCallOptions is the options of a call made without any: shared, never modified.
var noCallOptions = &callOptions{}

func newCallOptions(opts []CallOption) *callOptions {
	if len(opts) == 0 {
		return noCallOptions
	}
	co := &callOptions{}
	for _, o := range opts {
		o.applyCall(co)
	}
	if co.onProgress != nil {
		co.progressToken = json.RawMessage(strconv.Quote("p" + strconv.FormatInt(progressTokens.Add(1), 10)))
	}
	return co
}

func (co *callOptions) meta() *RequestMeta {
	if co.progressToken == nil && len(co.extraMeta) == 0 {
		return nil
	}
	return &RequestMeta{ProgressToken: co.progressToken, Other: co.extraMeta}
}

// WithProgress asks the server for progress notifications (it sets a progressToken) and
// calls fn, in order, for each one that arrives while the call runs.
func WithProgress(fn func(*ProgressParams)) CallOption {
	return callOptionFunc(func(o *callOptions) { o.onProgress = fn })
}

// WithMeta adds a key to the request's _meta (values are encoded as JSON).
func WithMeta(key string, value any) CallOption {
	return callOptionFunc(func(o *callOptions) {
		b, err := json.Marshal(value)
		if err != nil {
			return
		}
		if o.extraMeta == nil {
			o.extraMeta = make(map[string]json.RawMessage)
		}
		o.extraMeta[key] = b
	})
}

// WithTimeout bounds this call; when it expires the call returns an error whose code is
// CodeDeadlineExceeded and the server is sent notifications/cancelled. Zero, like leaving the
// option out, means the default (the context's deadline, else the client's
// WithDefaultCallTimeout); Unlimited means no bound but the context's.
func WithTimeout(d time.Duration) CallOption {
	return callOptionFunc(func(o *callOptions) { setLimit(&o.timeout, d, unlimitedDuration) })
}

var argsMarshal = protojson.MarshalOptions{}

// CallTypedTool calls a tool with a protobuf request and decodes its structuredContent into a new
// Res. A result with isError set becomes a *ToolError carrying the content. Interceptors see
// req as Request.Message and the decoded Res as Response.Message. Generated clients call this
// once per method.
func CallTypedTool[Res any, PRes interface {
	*Res
	proto.Message
}](ctx context.Context, c *Client, name string, req proto.Message, opts ...CallOption) (PRes, error) {
	r, err := newTypedToolRequest(name, req)
	if err != nil {
		return nil, fmt.Errorf("mcp tools/call %s: encode arguments: %w", name, err)
	}
	r.decode = toolDecoder[Res, PRes]{}
	resp, err := c.invoke(ctx, r, newCallOptions(opts))
	if err != nil {
		return nil, err
	}
	if out, ok := resp.Message.(PRes); ok && out != nil {
		return out, nil
	}
	if resp.Message == nil && resp.Result != nil {
		// An interceptor answered with a raw result only.
		return decodeToolResult[Res, PRes](name, rawResult(resp))
	}
	return nil, fmt.Errorf("mcp tools/call %s: the response is a %T, not a %T (an interceptor replaced it)", name, resp.Message, PRes(nil))
}

// resultDecoder decodes the result of a typed call into Response.Message.
type resultDecoder interface {
	decode(name string, raw json.RawMessage) (proto.Message, error)
}

// toolDecoder is decodeToolResult as a resultDecoder. It has no fields, so that making one an
// interface value allocates nothing (a generic function value would: its dictionary).
type toolDecoder[Res any, PRes interface {
	*Res
	proto.Message
}] struct{}

func (toolDecoder[Res, PRes]) decode(name string, raw json.RawMessage) (proto.Message, error) {
	out, err := decodeValidToolResult[Res, PRes](name, raw, true)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeToolResult decodes a tools/call result into a new Res: its structuredContent, or its
// content blocks for an *mcpv1.ToolResult; a result with isError set is a *ToolError.
func decodeToolResult[Res any, PRes interface {
	*Res
	proto.Message
}](name string, raw json.RawMessage) (PRes, error) {
	return decodeValidToolResult[Res, PRes](name, raw, false)
}

// decodeValidToolResult is decodeToolResult; valid says raw was validated as JSON already
// (it is the result of a message decodeMessage decoded), so that a scan can find
// structuredContent and isError without another encoding/json pass. Then protojson's decoding
// of structuredContent is the only decoding pass over the answer.
func decodeValidToolResult[Res any, PRes interface {
	*Res
	proto.Message
}](name string, raw json.RawMessage, valid bool) (PRes, error) {
	data, isError, err := structuredOf(name, raw, valid)
	if err != nil {
		return nil, err
	}
	out := PRes(new(Res))
	_, wantContent := any(out).(*mcpv1.ToolResult)
	if isError || wantContent || len(data) == 0 {
		// Decode the content blocks only when they are the result: the text block of a
		// typed result mirrors structuredContent, and unescaping it would double the
		// decoding work.
		var done bool
		if data, done, err = decodeContent(name, raw, out); err != nil {
			return nil, err
		}
		if done {
			return out, nil
		}
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("mcp tools/call %s: the result has no structuredContent to decode", name)
	}
	if err := protojsonfast.Unmarshal(resultUnmarshal, data, out); err != nil {
		return nil, fmt.Errorf("mcp tools/call %s: decode result into %s: %w", name, out.ProtoReflect().Descriptor().FullName(), err)
	}
	return out, nil
}

// structuredOf finds the structuredContent and isError of the result of the tool name: by a
// scan when raw is valid JSON already, else (or when the scan cannot tell) by encoding/json.
func structuredOf(name string, raw json.RawMessage, valid bool) (data []byte, isError bool, err error) {
	if valid {
		if data, isError, ok := scanToolResult(raw); ok {
			return data, isError, nil
		}
	}
	var light struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(raw, &light); err != nil {
		return nil, false, fmt.Errorf("mcp tools/call %s: decode result: %w", name, err)
	}
	return light.StructuredContent, light.IsError, nil
}

// decodeContent decodes the content blocks of the result of the tool name: a result with
// isError set is a *ToolError; a ToolResult out takes them all (done); otherwise their text
// is the JSON to decode, as servers that predate structuredContent send it.
func decodeContent(name string, raw json.RawMessage, out proto.Message) (data []byte, done bool, err error) {
	var res CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, false, fmt.Errorf("mcp tools/call %s: decode result: %w", name, err)
	}
	if res.IsError {
		return nil, false, &ToolError{Tool: name, Result: &res}
	}
	tr, ok := out.(*mcpv1.ToolResult)
	if !ok {
		return []byte(res.Text()), false, nil
	}
	conv, err := toProtoToolResult(&res)
	if err != nil {
		return nil, false, fmt.Errorf("mcp tools/call %s: %w", name, err)
	}
	proto.Merge(tr, conv)
	return nil, true, nil
}

// CallToolJSON calls a tool with arguments encoded by encoding/json and returns its result.
func (c *Client) CallToolJSON(ctx context.Context, name string, args any, opts ...CallOption) (*CallToolResult, error) {
	var raw json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("mcp tools/call %s: encode arguments: %w", name, err)
		}
		raw = b
	}
	return c.CallTool(ctx, name, raw, opts...)
}
