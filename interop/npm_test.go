package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// npmInstallTimeout bounds npm ci; the packages come from the registry (or npm's cache).
const npmInstallTimeout = 5 * time.Minute

var (
	installOnce sync.Once
	installErr  error
	tsDirAbs    string
)

// tsDir returns the absolute path of the npm project, ts/.
func tsDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("ts")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// nodePath returns the node binary; without one, see missingNode.
func nodePath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		missingNode(t, fmt.Errorf("node: %w", err))
	}
	return p
}

// ensureNodeModules makes sure ts/node_modules holds the packages package-lock.json pins,
// running npm ci once per test binary when they are missing or stale. It returns ts/.
func ensureNodeModules(t testing.TB) string {
	t.Helper()
	nodePath(t)
	installOnce.Do(func() {
		tsDirAbs, installErr = filepath.Abs("ts")
		if installErr == nil {
			installErr = installNodeModules(tsDirAbs)
		}
	})
	if errors.Is(installErr, exec.ErrNotFound) {
		missingNode(t, installErr)
	}
	if installErr != nil {
		t.Fatalf("npm packages for the interop tests: %v", installErr)
	}
	return tsDirAbs
}

var noticeOnce sync.Once

// missingNode ends a test that needs Node.js or npm where err says one is not on PATH. In CI
// (CI set) the test fails: interop is part of the suite there. Elsewhere it is skipped, and
// the first skip prints a notice saying what to install on stderr and on the terminal,
// because go test shows a passing package's output only with -v.
func missingNode(t testing.TB, err error) {
	t.Helper()
	msg := fmt.Sprintf("the interop tests need Node.js 20 or newer and npm on PATH (%v): install both (https://nodejs.org, or your system's nodejs and npm packages), then run go test ./interop/ again", err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	noticeOnce.Do(func() {
		notice := "\n*** SKIPPING the interop tests: " + msg + " ***\n\n"
		fmt.Fprint(os.Stderr, notice)
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprint(tty, notice)
			tty.Close()
		}
	})
	t.Skip(msg)
}

// lockedPackages returns the version package-lock.json pins for each direct dependency.
func lockedPackages(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	var lock struct {
		Packages map[string]struct {
			Version      string            `json:"version"`
			Dependencies map[string]string `json:"dependencies"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return nil, fmt.Errorf("package-lock.json: %w", err)
	}
	root, ok := lock.Packages[""]
	if !ok || len(root.Dependencies) == 0 {
		return nil, errors.New("package-lock.json: no root package with dependencies")
	}
	out := make(map[string]string, len(root.Dependencies))
	for name := range root.Dependencies {
		out[name] = lock.Packages["node_modules/"+name].Version
	}
	return out, nil
}

// installedMatches reports whether node_modules under dir holds the locked version of every
// direct dependency.
func installedMatches(dir string, locked map[string]string) bool {
	for name, version := range locked {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
		if err != nil {
			return false
		}
		var pkg struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(b, &pkg) != nil || pkg.Version != version {
			return false
		}
	}
	return true
}

// installNodeModules runs npm ci in a scratch folder next to ts/node_modules and renames the
// result into place, so that concurrent test runs never see (or make) a half-installed tree.
func installNodeModules(dir string) error {
	locked, err := lockedPackages(dir)
	if err != nil {
		return err
	}
	if installedMatches(dir, locked) {
		return nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("ts/node_modules is missing or stale, and npm: %w", err)
	}
	scratch, err := os.MkdirTemp(dir, ".npm-install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(scratch, f), b, 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = scratch
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("npm ci did not finish within %v:\n%s", npmInstallTimeout, out)
	}
	if err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", scratch, err, out)
	}
	target := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(target); err == nil {
		if installedMatches(dir, locked) {
			return nil // another test run installed them meanwhile
		}
		stale, err := os.MkdirTemp(dir, ".npm-stale-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(stale)
		if err := os.Rename(target, filepath.Join(stale, "node_modules")); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("move the stale node_modules aside: %w", err)
		}
	}
	if err := os.Rename(filepath.Join(scratch, "node_modules"), target); err != nil {
		if installedMatches(dir, locked) {
			return nil // another test run won the race
		}
		return fmt.Errorf("move node_modules into place: %w", err)
	}
	if !installedMatches(dir, locked) {
		return errors.New("npm ci finished but node_modules does not hold the locked versions")
	}
	return nil
}

// lockedVersion returns the version of an npm package that package-lock.json pins.
func lockedVersion(t testing.TB, name string) string {
	t.Helper()
	locked, err := lockedPackages(tsDir(t))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := locked[name]
	if !ok || v == "" {
		t.Fatalf("package-lock.json pins no version of %s", name)
	}
	return v
}

// syncBuffer is a bytes.Buffer safe for a process's output goroutine and the test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tsServer is a running `node server.mjs`.
type tsServer struct {
	URL    string
	stderr *syncBuffer
}

var listeningRE = regexp.MustCompile(`^listening (\d+)$`)

// startTSServer starts `node server.mjs 0 args...`, waits (bounded) until it prints its port,
// and stops it when the test ends: stdin is closed (the server exits on that, and so also when
// this test binary dies), then the process is killed if it is still there after a grace period.
func startTSServer(t *testing.T, args ...string) *tsServer {
	t.Helper()
	dir := ensureNodeModules(t)
	cmd := exec.Command(nodePath(t), append([]string{"server.mjs", "0", "--exit-with-stdin"}, args...)...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv := &tsServer{stderr: &syncBuffer{}}
	cmd.Stderr = srv.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node server.mjs: %v", err)
	}
	exited := make(chan error, 1)
	port := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		<-scanned // Wait closes stdout: read it all first
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			t.Errorf("node server.mjs still running 5s after its stdin closed; killing it")
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server.mjs stderr:\n%s", srv.stderr.String())
		}
	})
	select {
	case p := <-port:
		srv.URL = "http://127.0.0.1:" + p + "/mcp"
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("node server.mjs exited before listening: %v\nstderr:\n%s", err, srv.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("node server.mjs did not print its port within 30s\nstderr:\n%s", srv.stderr.String())
	}
	return srv
}
