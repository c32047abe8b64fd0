package library_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	libraryv1 "github.com/protomcp/protomcp/examples/library/gen/library/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// needNode returns node's path, after npm ci in ts/ when its node_modules is missing. Without
// Node.js the test fails in CI (CI set) and is skipped elsewhere, as the interop tests are.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npm")
	}
	if err != nil {
		msg := "the TypeScript SDK test needs Node.js 20 or newer and npm on PATH: " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(filepath.Join("ts", "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = "ts"
		cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in ts/: %v\n%s", err, out)
		}
	}
	return node
}

// TestTypeScriptSDK proves that the official MCP TypeScript SDK, as a client of the library's
// /mcp, gets the answers a grpc-go client gets to every read-only rpc (the SDK validating each
// against the tool's outputSchema), and a not-found error as a tool error with its status.
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	s := start(t)
	ctx := testCtx(t)
	cmd := exec.CommandContext(ctx, node, "client.mjs", s.url+"/mcp")
	cmd.Dir = "ts"
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client.mjs: %v\n%s%s", err, out, stderr)
	}
	var got struct {
		List, ListAuthor, Get, ExportResult json.RawMessage
		Export                              []json.RawMessage
		NotFound                            struct {
			IsError bool
			Text    string
			Status  struct {
				Code int
			}
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client.mjs printed %q: %v", out, err)
	}
	direct := grpcCaller(t, s)
	decode := func(raw json.RawMessage, m proto.Message) proto.Message {
		if err := protojson.Unmarshal(raw, m); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
		return m
	}
	check := func(name string, got, want proto.Message, err error) {
		if err != nil {
			t.Fatalf("grpc-go %s: %v", name, err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: the TypeScript SDK got %v, grpc-go %v", name, got, want)
		}
	}
	list, err := direct.list(ctx, &libraryv1.ListBooksRequest{})
	check("ListBooks", decode(got.List, new(libraryv1.ListBooksResponse)), list, err)
	some, err := direct.list(ctx, &libraryv1.ListBooksRequest{Author: "Octavia E. Butler"})
	check("ListBooks(author)", decode(got.ListAuthor, new(libraryv1.ListBooksResponse)), some, err)
	book, err := direct.get(ctx, &libraryv1.GetBookRequest{Id: 3})
	check("GetBook", decode(got.Get, new(libraryv1.Book)), book, err)
	export, err := direct.export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Export) != len(export) {
		t.Fatalf("ExportBooks: the TypeScript SDK got %d progress messages, grpc-go %d", len(got.Export), len(export))
	}
	for i := range export {
		check("ExportBooks", decode(got.Export[i], new(libraryv1.ExportBooksResponse)), export[i], nil)
	}
	check("ExportBooks result", decode(got.ExportResult, new(libraryv1.ExportBooksResponse)), export[len(export)-1], nil)
	if !got.NotFound.IsError || !strings.HasPrefix(got.NotFound.Text, "NOT_FOUND: no book has id 99") || got.NotFound.Status.Code != 5 {
		t.Errorf("GetBook(99): the TypeScript SDK got %+v, want a NOT_FOUND tool error with its status", got.NotFound)
	}
}
