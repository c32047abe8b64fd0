package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUserModule does what a user does: lays out a separate Go module with its own .proto,
// buf.yaml and buf.gen.yaml (in buf's managed mode, with go_package_prefix), generates code with
// protoc-gen-go and this checkout's protoc-gen-mcp, builds it against this checkout's runtime (a
// replace directive), and runs a main that serves one tool and calls it through the generated
// client, once validly and once breaking a buf.validate rule.
func TestUserModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	start := time.Now()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(wd string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = wd
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoErrorf(t, err, "%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		return string(out)
	}

	run(".", "go", "build", "-o", filepath.Join(bin, "protoc-gen-mcp"), ".")
	// --version is answered before protogen reads a request from stdin.
	out := run(".", filepath.Join(bin, "protoc-gen-mcp"), "--version")
	assert.True(t, strings.HasPrefix(out, "protoc-gen-mcp "), "protoc-gen-mcp --version = %q", out)
	run(filepath.Join(root, "tools"), "go", "build", "-o", filepath.Join(bin, "protoc-gen-go"), "google.golang.org/protobuf/cmd/protoc-gen-go")

	files := map[string]string{
		"buf.yaml": `version: v2
modules:
  - path: proto
  - path: third_party
`,
		// Managed mode sets the user's go_package options, and must leave protomcp's and
		// protovalidate's alone: their Go code is github.com/protomcp/protomcp/gen/mcp/v1 and
		// buf.build/gen/go/bufbuild/protovalidate/..., which a second copy under the user's
		// prefix would register twice ("file mcp/v1/options.proto is already registered").
		"buf.gen.yaml": `version: v2
clean: true
managed:
  enabled: true
  disable:
    - file_option: go_package
      path: mcp/v1
    - file_option: go_package
      path: buf/validate
  override:
    - file_option: go_package_prefix
      value: example.com/greet/gen
plugins:
  - local: ` + filepath.Join(bin, "protoc-gen-go") + `
    out: gen
    opt: paths=source_relative
  - local: ` + filepath.Join(bin, "protoc-gen-mcp") + `
    out: gen
    opt: paths=source_relative
inputs:
  - directory: proto
`,
		"proto/greet/v1/greet.proto": `syntax = "proto3";

package greet.v1;

import "buf/validate/validate.proto";
import "mcp/v1/options.proto";

// GreetService greets people.
service GreetService {
  // Each caller: 5 calls a minute, all tools together.
  option (mcp.v1.service).rate_limit = {calls: 5};
  // Says hello to someone.
  rpc Greet(GreetRequest) returns (GreetResponse) {
    option idempotency_level = NO_SIDE_EFFECTS;
    option (mcp.v1.tool).title = "Greet";
  }
}

// Who to greet.
message GreetRequest {
  // The person's name.
  string name = 1 [(mcp.v1.field).required = true];
  // How many exclamation marks, at most 3.
  optional int32 emphasis = 2 [(buf.validate.field).int32.lte = 3];
  // How to greet.
  Style style = 3 [(mcp.v1.field).required = true];
}

// A greeting style.
enum Style {
  // Not set.
  STYLE_UNSPECIFIED = 0;
  // Hello.
  STYLE_HELLO = 1;
}

// The greeting.
message GreetResponse {
  // The greeting text.
  string greeting = 1;
}
`,
		"go.mod": `module example.com/greet

go 1.26

require github.com/protomcp/protomcp v0.0.0

replace github.com/protomcp/protomcp => ` + root + `
`,
		"main.go": `package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"

	greetv1 "example.com/greet/gen/greet/v1"
	"example.com/greet/gen/greet/v1/greetv1mcp"
	"github.com/protomcp/protomcp/runtime"
)

type greeter struct {
	greetv1mcp.UnimplementedGreetServiceHandler
}

func (greeter) Greet(_ context.Context, req *greetv1.GreetRequest) (*greetv1.GreetResponse, error) {
	return &greetv1.GreetResponse{Greeting: "Hello, " + req.GetName() + strings.Repeat("!", int(req.GetEmphasis()))}, nil
}

func main() {
	srv := runtime.NewServer(runtime.Implementation{Name: "greet", Version: "1.0.0"})
	greetv1mcp.RegisterGreetServiceHandler(srv, greeter{})
	hs := httptest.NewServer(srv)
	defer hs.Close()

	ctx := context.Background()
	c := runtime.NewClient(hs.URL)
	defer c.Close(ctx)
	emphasis := int32(2)
	client := greetv1mcp.NewGreetServiceClient(c)
	res, err := client.Greet(ctx, &greetv1.GreetRequest{Name: "Ada", Emphasis: &emphasis, Style: greetv1.Style_STYLE_HELLO})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(res.GetGreeting())
	// The buf.validate rule and the required enum, enforced by the server.
	emphasis = 9
	_, err = client.Greet(ctx, &greetv1.GreetRequest{Name: "Ada", Emphasis: &emphasis, Style: greetv1.Style_STYLE_HELLO})
	fmt.Println(err)
	_, err = client.Greet(ctx, &greetv1.GreetRequest{Name: "Ada"})
	fmt.Println(err)
	// The service's rate limit, declared in the proto: valid calls until one is refused.
	for range 10 {
		if _, err = client.Greet(ctx, &greetv1.GreetRequest{Name: "Ada", Style: greetv1.Style_STYLE_HELLO}); err != nil {
			break
		}
	}
	fmt.Println(err)
}
`,
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	// The MCP options and protovalidate's rules, as a user would vendor them (or take them
	// from a buf dependency), in a module that is imported but not generated.
	for name, from := range map[string]string{
		"mcp/v1/options.proto":        filepath.Join(root, "proto", "mcp", "v1", "options.proto"),
		"mcp/v1/content.proto":        filepath.Join(root, "proto", "mcp", "v1", "content.proto"),
		"buf/validate/validate.proto": filepath.Join(root, "third_party", "protovalidate", "buf", "validate", "validate.proto"),
	} {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		path := filepath.Join(dir, "third_party", filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}

	run(dir, "go", "tool", "-modfile="+filepath.Join(root, "tools", "go.mod"), "buf", "generate")
	generated := filepath.Join(dir, "gen", "greet", "v1", "greetv1mcp", "greet.mcp.go")
	require.FileExists(t, generated, "buf generate did not write it")
	for _, stray := range []string{"mcp", "buf"} {
		_, err := os.Stat(filepath.Join(dir, "gen", stray))
		assert.ErrorIs(t, err, fs.ErrNotExist, "buf generate also generated gen/%s, which belongs to a dependency", stray)
	}
	run(dir, "go", "mod", "tidy")
	run(dir, "go", "vet", "./...")
	assert.Empty(t, run(dir, "gofmt", "-l", "gen"), "generated files that are not gofmt-clean")
	out = run(dir, "go", "run", ".")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, "lines the user program printed: %q", out)
	assert.Equal(t, "Hello, Ada!!", lines[0], "the valid call")
	assert.Contains(t, lines[1], "emphasis: must be less than or equal to 3", "the call breaking a rule on emphasis")
	assert.Contains(t, lines[2], `required field "style" must not be STYLE_UNSPECIFIED`, "the call without a style")
	assert.Contains(t, lines[3], "rate limit exceeded (service/greet.v1.GreetService: 5/1m0s per caller); retry after 12 seconds", "the calls over (mcp.v1.service).rate_limit")
	for _, pb := range []string{"gen/greet/v1/greet.pb.go"} {
		b, err := os.ReadFile(filepath.Join(dir, pb))
		require.NoError(t, err)
		for _, want := range []string{`"github.com/protomcp/protomcp/gen/mcp/v1"`, `"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"`} {
			assert.Contains(t, string(b), want, "%s: managed mode rewrote a dependency's go_package", pb)
		}
	}
	t.Logf("user module built and ran in %v", time.Since(start).Round(time.Millisecond))
}
