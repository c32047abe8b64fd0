package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUserModule does what a user does: lays out a separate Go module with its own .proto,
// buf.yaml and buf.gen.yaml, generates code with protoc-gen-go and this checkout's
// protoc-gen-mcp, builds it against this checkout's runtime (a replace directive), and runs a
// main that serves one tool and calls it through the generated client.
func TestUserModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	start := time.Now()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(wd string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = wd
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	run(".", "go", "build", "-o", filepath.Join(bin, "protoc-gen-mcp"), ".")
	// --version is answered before protogen reads a request from stdin.
	if out := run(".", filepath.Join(bin, "protoc-gen-mcp"), "--version"); !strings.HasPrefix(out, "protoc-gen-mcp ") {
		t.Errorf("protoc-gen-mcp --version = %q", out)
	}
	run(filepath.Join(root, "tools"), "go", "build", "-o", filepath.Join(bin, "protoc-gen-go"), "google.golang.org/protobuf/cmd/protoc-gen-go")

	files := map[string]string{
		"buf.yaml": `version: v2
modules:
  - path: proto
  - path: third_party
`,
		"buf.gen.yaml": `version: v2
clean: true
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

import "mcp/v1/options.proto";

option go_package = "example.com/greet/gen/greet/v1;greetv1";

// GreetService greets people.
service GreetService {
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
  // How many exclamation marks.
  optional int32 emphasis = 2;
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
	res, err := greetv1mcp.NewGreetServiceClient(c).Greet(ctx, &greetv1.GreetRequest{Name: "Ada", Emphasis: &emphasis})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(res.GetGreeting())
}
`,
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The MCP options, as a user would vendor them (or take them from a buf dependency).
	for _, name := range []string{"options.proto", "content.proto"} {
		b, err := os.ReadFile(filepath.Join(root, "proto", "mcp", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "third_party", "mcp", "v1", name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	run(dir, "go", "tool", "-modfile="+filepath.Join(root, "tools", "go.mod"), "buf", "generate")
	generated := filepath.Join(dir, "gen", "greet", "v1", "greetv1mcp", "greet.mcp.go")
	if _, err := os.Stat(generated); err != nil {
		t.Fatalf("buf generate did not write %s: %v", generated, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gen", "mcp")); err == nil {
		t.Errorf("buf generate also generated the MCP options, which belong to protomcp")
	}
	run(dir, "go", "mod", "tidy")
	run(dir, "go", "vet", "./...")
	if out := run(dir, "gofmt", "-l", "gen"); out != "" {
		t.Errorf("generated code is not gofmt-clean: %s", out)
	}
	out := run(dir, "go", "run", ".")
	if got, want := strings.TrimSpace(out), "Hello, Ada!!"; got != want {
		t.Errorf("user program printed %q, want %q", got, want)
	}
	t.Logf("user module built and ran in %v", time.Since(start).Round(time.Millisecond))
}
