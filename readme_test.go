package protomcp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quickStartStep is one fenced block of the README's quick start: a file to write, or shell
// commands to run.
type quickStartStep struct {
	file       string // the path named by the block's first line, for a file
	text       string // the block's text
	background bool   // commands marked <!-- quickstart: background -->: a server left running
}

// fileHeader matches a block's first line when it names the file the block is: "# buf.yaml",
// "// cmd/greet-server/main.go".
var fileHeader = regexp.MustCompile(`^(?:#|//) ([\w./-]+\.\w+)$`)

// quickStart returns the steps of the README section headed "## Quick start", in order.
func quickStart(t *testing.T, readme string) []quickStartStep {
	t.Helper()
	return sectionSteps(t, readme, "Quick start")
}

// sectionSteps returns the steps of the README section headed "## "+heading, in order.
func sectionSteps(t *testing.T, readme, heading string) []quickStartStep {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", "## "+heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var (
		steps      []quickStartStep
		block      []string
		lang       string
		in         bool
		background bool
	)
	sc := bufio.NewScanner(strings.NewReader(section))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, lang, block = true, strings.TrimPrefix(line, "```"), nil
		case in && line == "```":
			in = false
			text := strings.Join(block, "\n") + "\n"
			if m := fileHeader.FindStringSubmatch(block[0]); m != nil && lang != "sh" {
				steps = append(steps, quickStartStep{file: m[1], text: text})
			} else if lang == "sh" {
				steps = append(steps, quickStartStep{text: text, background: background})
			} else {
				t.Fatalf("quick start: a %q block that names no file:\n%s", lang, text)
			}
			background = false
		case in:
			block = append(block, line)
		case strings.TrimSpace(line) == "<!-- quickstart: background -->":
			background = true
		}
	}
	if in {
		t.Fatal("quick start: a code block is not closed")
	}
	return steps
}

// TestREADMEQuickStart runs the README's quick start as a new user would, in a fresh module in
// a temporary directory against this checkout: it writes every file the section shows, runs
// every command in order (the server in the background, on a free port instead of 8080), and
// checks that the client prints what the README says it prints. So the quick start cannot rot.
func TestREADMEQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	steps := quickStart(t, string(readme))

	// The README's address, 127.0.0.1:8080, may be taken here: use a free port instead.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	localize := func(s string) string { return strings.ReplaceAll(s, "127.0.0.1:8080", addr) }

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	env := append(os.Environ(), "PROTOMCP="+root, "GOWORK=off", "GOFLAGS=")

	var wantOutput string
	var files, commands int
	for _, step := range steps {
		if step.file != "" {
			path := filepath.Join(dir, filepath.FromSlash(step.file))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(localize(step.text)), 0o644); err != nil {
				t.Fatal(err)
			}
			files++
			continue
		}
		lines := strings.Split(strings.TrimSpace(step.text), "\n")
		for i, line := range lines {
			line = localize(strings.TrimSpace(line))
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			commands++
			if _, out, ok := strings.Cut(line, "# prints: "); ok {
				wantOutput = strings.TrimSpace(out)
			}
			if step.background && i == len(lines)-1 {
				startServer(ctx, t, dir, env, line, addr)
				continue
			}
			cmd := exec.CommandContext(ctx, "bash", "-c", line)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("quick start: %s: %v\n%s", line, err, out)
			}
			if wantOutput != "" && strings.Contains(line, "# prints: ") {
				if got := strings.TrimSpace(string(out)); got != wantOutput {
					t.Errorf("quick start: %s printed %q, the README says %q", line, got, wantOutput)
				}
			}
		}
	}
	if files < 5 || commands < 8 || wantOutput == "" {
		t.Errorf("quick start: found %d files, %d commands and output %q: the README's markers changed?", files, commands, wantOutput)
	}
}

// startServer runs line in the background until the test ends, and waits until addr accepts
// connections (or the command exits).
func startServer(ctx context.Context, t *testing.T, dir string, env []string, line, addr string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // go run's child goes with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("quick start: %s exited: %v\n%s", line, err, out.String())
		case <-ctx.Done():
			t.Fatalf("quick start: %s: nothing listening on %s: %v", line, addr, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
	}
}

// TestQuickStartParser checks the parser on a README of its own, so that a change to the
// markers fails here with a clear message rather than as an empty run above.
func TestQuickStartParser(t *testing.T) {
	readme := "# x\n\n## Quick start\n\n```sh\ngo mod init example.com/x\n```\n\n```go\n// cmd/x/main.go\npackage main\n```\n\n" +
		"<!-- quickstart: background -->\n```sh\ngo run ./cmd/x\n```\n\n## Next\n\n```go\n// ignored.go\n```\n"
	steps := quickStart(t, readme)
	got := fmt.Sprintf("%+v", steps)
	want := "[{file: text:go mod init example.com/x\n background:false} {file:cmd/x/main.go text:// cmd/x/main.go\npackage main\n background:false} {file: text:go run ./cmd/x\n background:true}]"
	if got != want {
		t.Errorf("steps:\n got %s\nwant %s", got, want)
	}
}

// grpcProgram serves the quick start's GreetService from a grpc-go implementation through the
// line README's "Already have a gRPC service?" shows (README_LINE), calls it in memory, and
// prints the greeting and how many times the interceptor ran.
const grpcProgram = `package main

import (
	"context"
	"fmt"
	"os"

	greetv1 "example.com/greet/gen/greet/v1"
	"example.com/greet/gen/greet/v1/greetv1mcp"
	"github.com/protomcp/protomcp/grpcmcp"
	"github.com/protomcp/protomcp/runtime"
	"google.golang.org/grpc"
)

type greeter struct {
	greetv1.UnimplementedGreetServiceServer
}

func (greeter) Greet(ctx context.Context, req *greetv1.GreetRequest) (*greetv1.GreetResponse, error) {
	return &greetv1.GreetResponse{Greeting: "Hello, " + req.GetName() + "!"}, nil
}

func main() {
	calls := 0
	logging := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		calls++
		return h(ctx, req)
	}
	srv := runtime.NewServer(runtime.Implementation{Name: "greet", Version: "1.0.0"})
	impl := greeter{}
	README_LINE
	ctx := context.Background()
	c, err := runtime.NewInMemoryClient(ctx, srv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close(ctx)
	res, err := greetv1mcp.NewGreetServiceClient(c).Greet(ctx, &greetv1.GreetRequest{Name: "Ada"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(res.GetGreeting(), calls)
}
`

// TestREADMEGRPC runs the README's "Already have a gRPC service?" section as written: in a
// fresh module made by the quick start's files and commands (its server is not started), it
// runs the section's commands, then a program that registers a grpc-go implementation with
// the section's line, and checks that a call goes through the interceptor once.
func TestREADMEGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "Already have a gRPC service?"
	_, section, _ := strings.Cut(string(readme), "\n## "+heading+"\n")
	line := regexp.MustCompile("`(greetv1mcp\\.RegisterGreetServiceGRPCServer\\([^`]*\\))`").FindStringSubmatch(section)
	if line == nil {
		t.Fatal("the section shows no greetv1mcp.RegisterGreetServiceGRPCServer(...) line")
	}
	steps := append(quickStart(t, string(readme)), sectionSteps(t, string(readme), heading)...)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	env := append(os.Environ(), "PROTOMCP="+root, "GOWORK=off", "GOFLAGS=")
	run := func(line string) string {
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	for _, step := range steps {
		if step.file != "" {
			path := filepath.Join(dir, filepath.FromSlash(step.file))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(step.text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if step.background {
			continue // the quick start's server: not needed here
		}
		for _, l := range strings.Split(strings.TrimSpace(step.text), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "go run ./cmd/greet-client") {
				run(l)
			}
		}
	}
	prog := filepath.Join(dir, "cmd", "greet-grpc", "main.go")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte(strings.Replace(grpcProgram, "README_LINE", line[1], 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(run("go run ./cmd/greet-grpc")); got != "Hello, Ada! 1" {
		t.Errorf("the program printed %q, want %q", got, "Hello, Ada! 1")
	}
}
