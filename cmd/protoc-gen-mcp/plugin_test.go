package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The test image is built by `make testimage` (buf build --as-file-descriptor-set) from the
// workspace's modules: unlike descriptors compiled into Go binaries, it keeps comments.
var loadImage = sync.OnceValues(func() (*descriptorpb.FileDescriptorSet, error) {
	b, err := os.ReadFile(filepath.Join("testdata", "image.binpb"))
	if err != nil {
		return nil, err
	}
	set := &descriptorpb.FileDescriptorSet{}
	return set, proto.Unmarshal(b, set)
})

func image(t *testing.T) *descriptorpb.FileDescriptorSet {
	t.Helper()
	set, err := loadImage()
	require.NoError(t, err, "load test image (run make testimage)")
	return set
}

// runPlugin runs the plugin in-process on files of the test image, as protoc or buf would.
func runPlugin(t *testing.T, param string, files ...string) *pluginpb.CodeGeneratorResponse {
	t.Helper()
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: files,
		Parameter:      proto.String(param),
		ProtoFile:      image(t).GetFile(),
	}
	var flags flag.FlagSet
	cfg := newConfig(&flags)
	gen, err := protogen.Options{ParamFunc: flags.Set}.New(req)
	if err != nil {
		return &pluginpb.CodeGeneratorResponse{Error: proto.String(err.Error())}
	}
	if err := cfg.generate(gen); err != nil {
		gen.Error(err)
	}
	return gen.Response()
}

func TestGolden(t *testing.T) {
	cases := []struct {
		name  string
		param string
		files []string
	}{
		{"weather", "paths=source_relative", []string{"weather/v1/weather.proto"}},
		{"types", "paths=source_relative", []string{"test/v1/types.proto"}},
		{"editions", "paths=source_relative", []string{"test/editions/v1/editions.proto"}},
		{"proto2", "paths=source_relative", []string{"test/proto2/v1/proto2.proto"}},
		// Beside the .pb.go files, with import paths.
		{"no_suffix", "package_suffix=", []string{"test/proto2/v1/proto2.proto"}},
		{"custom_suffix", "paths=source_relative,package_suffix=tools", []string{"test/editions/v1/editions.proto"}},
		// A file without services generates nothing.
		{"no_services", "paths=source_relative", []string{"google/api/field_behavior.proto"}},
		// Task tools: one that may run as a task, an rpc returning google.longrunning.Operation
		// (a task tool whose result is operation_info's response_type), one that may not.
		{"tasks", "paths=source_relative", []string{"test/tasks/v1/tasks.proto"}},
		// Their grpc-go and connect-go bridges: an Operation rpc's implementation returns a done
		// google.longrunning.Operation, whose response is the tool's result.
		{"tasks_bridges", "paths=source_relative,grpc=true,connect=true", []string{"test/tasks/v1/tasks.proto"}},
		// Prompts, resources and a server-streaming tool.
		{"surface", "paths=source_relative", []string{"test/surface/v1/surface.proto"}},
		// List cache hints of a service and of its rpcs.
		{"cache", "paths=source_relative", []string{"test/cache/v1/cache.proto"}},
		// A starter server beside the generated code.
		{"skeleton", "paths=source_relative,skeleton=true", []string{"weather/v1/weather.proto"}},
		// The grpc-go bridge (grpcmcp) beside the generated code: tools, prompts, resources
		// and a server-streaming tool.
		{"grpc", "paths=source_relative,grpc=true", []string{"test/surface/v1/surface.proto"}},
		// The connect-go bridge (connectmcp), likewise.
		{"connect", "paths=source_relative,connect=true", []string{"test/surface/v1/surface.proto"}},
		// A proto one does not own: rpcs chosen by pattern, read-only ones only, names prefixed.
		{"filters", "paths=source_relative,include=weather.v1.WeatherService.*,exclude=*.RenderForecastChart|*.Nothing,read_only=true,tool_prefix=wx_", []string{"weather/v1/weather.proto"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := runPlugin(t, tc.param, tc.files...)
			require.Nil(t, resp.Error, "plugin error: %s", resp.GetError())
			want := uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL | pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
			assert.Equal(t, want, resp.GetSupportedFeatures(), "supported features")
			assert.Equal(t, int32(descriptorpb.Edition_EDITION_PROTO2), resp.GetMinimumEdition(), "minimum edition")
			assert.Equal(t, int32(descriptorpb.Edition_EDITION_2024), resp.GetMaximumEdition(), "maximum edition")
			dir := filepath.Join("testdata", "golden", tc.name)
			if *update {
				require.NoError(t, os.RemoveAll(dir))
			}
			got := map[string]bool{}
			for _, f := range resp.File {
				got[f.GetName()] = true
				content := []byte(f.GetContent())
				if formatted, err := format.Source(content); err != nil {
					assert.Fail(t, fmt.Sprintf("%s does not parse: %v", f.GetName(), err))
				} else if !bytes.Equal(formatted, content) {
					assert.Fail(t, fmt.Sprintf("%s is not gofmt-clean", f.GetName()))
				}
				path := filepath.Join(dir, filepath.FromSlash(f.GetName()))
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
					require.NoError(t, os.WriteFile(path, content, 0o644))
					continue
				}
				golden, err := os.ReadFile(path)
				if err != nil {
					assert.Fail(t, fmt.Sprintf("%s: %v (run go test -update)", f.GetName(), err))
					continue
				}
				assert.Truef(t, bytes.Equal(golden, content), "%s differs from %s (run go test -update and review the diff):\n%s", f.GetName(), path, firstDiff(string(golden), string(content)))
			}
			// No golden may be left without a generated file.
			_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				rel, _ := filepath.Rel(dir, path)
				assert.Truef(t, got[filepath.ToSlash(rel)], "golden %s was not generated", path)
				return nil
			})
		})
	}
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n- " + wl + "\n+ " + gl
		}
	}
	return ""
}

func TestGenerateErrors(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  []string // substrings of the error, beyond the file and the rpc
		file  string
		rpc   string
	}{
		{"bad tool name", []string{"errors/badname/v1/badname.proto"}, []string{`"get weather"`, "^[A-Za-z0-9_-]{1,64}$"}, "errors/badname/v1/badname.proto", "errors.badname.v1.S.Get"},
		{"tool name too long", []string{"errors/longname/v1/longname.proto"}, []string{"is invalid"}, "errors/longname/v1/longname.proto", "errors.longname.v1.S.Get"},
		{"bad prefix", []string{"errors/badprefix/v1/badprefix.proto"}, []string{`"weather.get"`, "is invalid"}, "errors/badprefix/v1/badprefix.proto", "errors.badprefix.v1.S.Get"},
		{"duplicate name in a service", []string{"errors/dupname/v1/dupname.proto"}, []string{`"get_thing"`, "already used by rpc errors.dupname.v1.S.GetThing"}, "errors/dupname/v1/dupname.proto", "errors.dupname.v1.S.Other"},
		{"duplicate name across services", []string{"errors/dupservices/v1/dupservices.proto"}, []string{`"get"`, "already used by rpc errors.dupservices.v1.A.Get"}, "errors/dupservices/v1/dupservices.proto", "errors.dupservices.v1.B.Get"},
		{"duplicate name across files of a package", []string{"errors/pkgdup/v1/a.proto", "errors/pkgdup/v1/b.proto"}, []string{`"get"`, "already used by rpc errors.pkgdup.v1.A.Get (errors/pkgdup/v1/a.proto)", "same Go package"}, "errors/pkgdup/v1/b.proto", "errors.pkgdup.v1.B.Get"},
		{"client streaming", []string{"errors/clientstream/v1/clientstream.proto"}, []string{"client-streaming", "skip"}, "errors/clientstream/v1/clientstream.proto", "errors.clientstream.v1.S.Upload"},
		{"bidi streaming", []string{"errors/bidistream/v1/bidistream.proto"}, []string{"bidirectional streaming", "skip"}, "errors/bidistream/v1/bidistream.proto", "errors.bidistream.v1.S.Chat"},
		{"server streaming of ToolResult", []string{"errors/serverstream/v1/serverstream.proto"}, []string{"server-streaming", "mcp.v1.ToolResult", "skip"}, "errors/serverstream/v1/serverstream.proto", "errors.serverstream.v1.S.Watch"},
		{"prompt without PromptResult", []string{"errors/promptresult/v1/promptresult.proto"}, []string{"must return mcp.v1.PromptResult, not google.protobuf.Empty"}, "errors/promptresult/v1/promptresult.proto", "errors.promptresult.v1.S.Greet"},
		{"prompt argument not a scalar", []string{"errors/promptarg/v1/promptarg.proto"}, []string{"prompt argument errors.promptarg.v1.GreetRequest.when", "google.protobuf.Timestamp", "scalars or enums"}, "errors/promptarg/v1/promptarg.proto", "errors.promptarg.v1.S.Greet"},
		{"streaming prompt", []string{"errors/promptstream/v1/promptstream.proto"}, []string{"a prompt cannot stream"}, "errors/promptstream/v1/promptstream.proto", "errors.promptstream.v1.S.Greet"},
		{"prompt and tool", []string{"errors/promptandtool/v1/promptandtool.proto"}, []string{"(mcp.v1.tool) cannot be combined"}, "errors/promptandtool/v1/promptandtool.proto", "errors.promptandtool.v1.S.Greet"},
		{"template variable not a field", []string{"errors/templatevar/v1/templatevar.proto"}, []string{"{item_id} is not a field of errors.templatevar.v1.GetItemRequest"}, "errors/templatevar/v1/templatevar.proto", "errors.templatevar.v1.S.GetItem"},
		{"field not a template variable", []string{"errors/templatefield/v1/templatefield.proto"}, []string{"field errors.templatefield.v1.GetItemRequest.lang is not a variable"}, "errors/templatefield/v1/templatefield.proto", "errors.templatefield.v1.S.GetItem"},
		{"static resource with a template", []string{"errors/statictemplate/v1/statictemplate.proto"}, []string{"service errors.statictemplate.v1.S: (mcp.v1.service).resources[0]", `"items://{id}" has template variables`}, "errors/statictemplate/v1/statictemplate.proto", ""},
		{"resource with uri and uri_template", []string{"errors/resourceuri/v1/resourceuri.proto"}, []string{"either uri or uri_template"}, "errors/resourceuri/v1/resourceuri.proto", "errors.resourceuri.v1.S.GetItem"},
		{"bad example", []string{"errors/badexample/v1/badexample.proto"}, []string{"errors.badexample.v1.GetRequest.city", `"Paris" is not valid JSON`}, "errors/badexample/v1/badexample.proto", "errors.badexample.v1.S.Get"},
		{"example of the wrong type", []string{"errors/badexampletype/v1/badexampletype.proto"}, []string{"errors.badexampletype.v1.GetRequest.days", `[1,"two"] does not fit the field: item 1: type: got string, want integer`}, "errors/badexampletype/v1/badexampletype.proto", "errors.badexampletype.v1.S.Get"},
		{"generated identifiers collide", []string{"errors/collide/v1/collide.proto"}, []string{"LibraryAdminListBooksToolName collides with rpc errors.collide.v1.Library.AdminListBooks (errors/collide/v1/collide.proto)"}, "errors/collide/v1/collide.proto", "errors.collide.v1.LibraryAdmin.ListBooks"},
		{"generated identifier collides with protoc-gen-go's", []string{"errors/collidepb/v1/collidepb.proto"}, []string{"ShelfGetToolName collides with message errors.collidepb.v1.ShelfGetToolName (errors/collidepb/v1/collidepb.proto, protoc-gen-go)"}, "errors/collidepb/v1/collidepb.proto", "errors.collidepb.v1.Shelf.Get"},
		{"scope with a space", []string{"errors/badscope/v1/badscope.proto"}, []string{`"weather:read weather:write"`, "RFC 6749"}, "errors/badscope/v1/badscope.proto", "errors.badscope.v1.S.Get"},
		{"rate limit of no calls", []string{"errors/badratelimit/v1/badratelimit.proto"}, []string{"(mcp.v1.tool).rate_limit allows no calls"}, "errors/badratelimit/v1/badratelimit.proto", "errors.badratelimit.v1.S.Get"},
		{"negative cache TTL", []string{"errors/badcachettl/v1/badcachettl.proto"}, []string{"cache_ttl_ms is -1", "must not be negative"}, "errors/badcachettl/v1/badcachettl.proto", "errors.badcachettl.v1.S.Get"},
		{"Operation without operation_info", []string{"errors/noopinfo/v1/noopinfo.proto"}, []string{"google.longrunning.operation_info", "response_type"}, "errors/noopinfo/v1/noopinfo.proto", "errors.noopinfo.v1.S.Import"},
		{"Operation that forbids tasks", []string{"errors/forbiddenop/v1/forbiddenop.proto"}, []string{"cannot be TASK_SUPPORT_FORBIDDEN"}, "errors/forbiddenop/v1/forbiddenop.proto", "errors.forbiddenop.v1.S.Import"},
		{"task client method collides", []string{"errors/taskclash/v1/taskclash.proto"}, []string{"StartBuild", "collides"}, "errors/taskclash/v1/taskclash.proto", ""},
		{"arguments not an object", []string{"errors/rootnotobject/v1/rootnotobject.proto"}, []string{"google.protobuf.Timestamp", "must be JSON objects"}, "errors/rootnotobject/v1/rootnotobject.proto", "errors.rootnotobject.v1.S.At"},
	}
	// More plugin parameters, by case.
	params := map[string]string{"generated identifier collides with protoc-gen-go's": "package_suffix="}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			param := "paths=source_relative"
			if more := params[tc.name]; more != "" {
				param += "," + more
			}
			resp := runPlugin(t, param, tc.files...)
			msg := resp.GetError()
			require.NotEmpty(t, msg, "no error; generated %d files", len(resp.File))
			assert.Empty(t, resp.File, "files generated despite the error")
			assert.Equal(t, 1, strings.Count(msg, tc.file+": "), "times the error %q names the file", msg)
			prefix := tc.file + ": rpc " + tc.rpc + ": "
			if tc.rpc == "" { // an error about the service, named in tc.want
				prefix = tc.file + ": "
			}
			for _, want := range append([]string{prefix}, tc.want...) {
				assert.Contains(t, msg, want)
			}
		})
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"GetForecast":    "get_forecast",
		"Get":            "get",
		"GetHTTPStatus":  "get_http_status",
		"HTTPGet":        "http_get",
		"ListV2Items":    "list_v2_items",
		"Get2FA":         "get2_fa",
		"already_snake":  "already_snake",
		"Mixed_Case":     "mixed_case",
		"ToolResultJSON": "tool_result_json",
	} {
		if got := snakeCase(in); got != want {
			assert.Fail(t, fmt.Sprintf("snakeCase(%q) = %q, want %q", in, got, want))
		}
	}
}

func TestUnexport(t *testing.T) {
	for in, want := range map[string]string{
		"WeatherService": "weatherService",
		"HTTPService":    "httpService",
		"API":            "api",
		"A":              "a",
		"already":        "already",
	} {
		if got := unexport(in); got != want {
			assert.Fail(t, fmt.Sprintf("unexport(%q) = %q, want %q", in, got, want))
		}
	}
}

func TestCleanComment(t *testing.T) {
	in := " First line\n continues here.\n\n Values:\n - A: one\n - B: two\n   indented\n buf:lint:ignore FOO\n"
	want := "First line continues here.\n\nValues:\n- A: one\n- B: two\n  indented"
	assert.Equal(t, want, cleanComment(in))
}

func TestRawString(t *testing.T) {
	if got, want := rawString("a `b` c"), "`a ` + \"`\" + `b` + \"`\" + ` c`"; got != want {
		assert.Fail(t, fmt.Sprintf("rawString = %s, want %s", got, want))
	}
}

// TestMaxSchemaBytes: a schema over the limit is a generate-time error naming the rpc, the
// size and the parameter.
func TestMaxSchemaBytes(t *testing.T) {
	resp := runPlugin(t, "paths=source_relative,max_schema_bytes=500", "weather/v1/weather.proto")
	msg := resp.GetError()
	for _, want := range []string{"rpc weather.v1.WeatherService.GetForecast", "schema is", "more than max_schema_bytes=500"} {
		assert.Contains(t, msg, want)
	}
	resp = runPlugin(t, "paths=source_relative", "test/shared/v1/shared.proto")
	assert.Nil(t, resp.Error, "the shared chain is over the default limit: %s", resp.GetError())
}

// TestFormatWarning: a format outside the JSON Schema vocabulary is kept, with a warning that
// names the field; a known one is not warned about.
func TestFormatWarning(t *testing.T) {
	var warnings []string
	saved := warnf
	warnf = func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	defer func() { warnf = saved }()
	resp := runPlugin(t, "paths=source_relative", "errors/badformat/v1/badformat.proto")
	require.Nil(t, resp.Error, resp.GetError())
	require.NotEmpty(t, warnings)
	assert.Contains(t, warnings[0], `errors.badformat.v1.GetRequest.phone: (mcp.v1.field).format "phone" is not a format`)
	for _, w := range warnings {
		assert.NotContains(t, w, "GetRequest.mail", "warned about a known format")
	}
}

var validateField = regexp.MustCompile(`Validate:\s+bufvalidate\.Validate,`)

// TestValidateOnlyWhereRules: the generated code validates with protovalidate (and imports
// it) for the tools whose arguments have buf.validate rules, and only for those (weather:
// get_forecast, forecast_chart, export_forecast and get_climate_report).
func TestValidateOnlyWhereRules(t *testing.T) {
	for file, want := range map[string]int{"weather/v1/weather.proto": 4, "test/v1/types.proto": 0, "contract/v1/contract.proto": 1} {
		resp := runPlugin(t, "paths=source_relative", file)
		require.Nil(t, resp.Error, resp.GetError())
		require.NotEmpty(t, resp.File, file)
		content := resp.File[0].GetContent()
		assert.Len(t, validateField.FindAllString(content, -1), want, "%s: tools that validate", file)
		assert.Equal(t, want > 0, strings.Contains(content, `"github.com/protomcp/protomcp/bufvalidate"`), "%s: imports bufvalidate", file)
	}
}

// TestPackageDocOnce: a generated package gets its package doc once, on its first file, when
// several .proto files generate into it; beside the .pb.go files (package_suffix=) it gets
// none, since the package is protoc-gen-go's.
func TestPackageDocOnce(t *testing.T) {
	for _, tc := range []struct {
		param string
		want  int
	}{
		{"paths=source_relative", 1},
		{"paths=source_relative,package_suffix=", 0},
	} {
		resp := runPlugin(t, tc.param, "test/multi/v1/a.proto", "test/multi/v1/b.proto")
		require.Empty(t, resp.GetError(), tc.param)
		require.Len(t, resp.GetFile(), 2, tc.param)
		docs := 0
		for _, f := range resp.GetFile() {
			docs += strings.Count(f.GetContent(), "\n// Package multiv1")
		}
		assert.Equal(t, tc.want, docs, "package docs with %s", tc.param)
	}
}

// Comments become descriptions wherever the service and messages are defined: a proto of
// another team's generated itself (as buf's --include-imports generates a dependency), and a
// service of ours whose request and response messages are only imported from it. The request
// carries every file's source info, as protoc and buf send it.
func TestImportedComments(t *testing.T) {
	content := func(resp *pluginpb.CodeGeneratorResponse) string {
		t.Helper()
		require.Empty(t, resp.GetError())
		var all string
		for _, f := range resp.GetFile() {
			all += f.GetContent()
		}
		return all
	}
	messages := []string{"The order's number, as printed on the receipt.", "The amount due, in cents."}

	theirs := content(runPlugin(t, "paths=source_relative", "test/theirs/v1/theirs.proto"))
	for _, want := range append([]string{"Finds the invoice of a customer's order."}, messages...) {
		assert.Contains(t, theirs, want, "generated dependency")
	}

	ours := content(runPlugin(t, "paths=source_relative", "test/ours/v1/ours.proto"))
	for _, want := range append([]string{"Looks an invoice up for support staff."}, messages...) {
		assert.Contains(t, ours, want, "imported messages")
	}
}
