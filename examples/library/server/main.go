// Command server serves the library example on one port: gRPC (h2c), gRPC-Web, Connect and
// MCP (/mcp), from one implementation and one interceptor chain, on a SQLite database that it
// creates and seeds on first start.
//
//	server -addr 127.0.0.1:8086 -db library.db
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/protomcp/protomcp/examples/library"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8086", "the address to listen on (loopback: expose it only behind authentication)")
	dbPath := flag.String("db", "library.db", "the SQLite database file, created and seeded on first start")
	exportDelay := flag.Duration("export-delay", 0, "a pause before each book that ExportBooks streams (to watch a long stream)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*addr, *dbPath, *exportDelay, log); err != nil {
		log.Error("server failed", "err", err)
		os.Exit(1)
	}
}

func run(addr, dbPath string, exportDelay time.Duration, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := library.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	h, mcp := library.Handler(&library.Service{DB: db, ExportDelay: exportDelay, Log: log}, log)

	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC without TLS (h2c): Go's own, no x/net
	hs := &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout nor WriteTimeout: either would cut long gRPC and SSE streams.
		IdleTimeout: 2 * time.Minute,
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = mcp.Shutdown(shutdownCtx) // the MCP server first: it ends its streams
		_ = hs.Shutdown(shutdownCtx)
	}()
	url := "http://" + ln.Addr().String()
	log.Info("serving", "url", url, "mcp", url+"/mcp", "db", dbPath)
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
