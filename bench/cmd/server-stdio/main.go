// Command server-stdio serves the benchmark tools over stdio with protomcp or the official
// go-sdk, for the stdio rows of benchrun (a client launches it).
//
//	server-stdio -sdk protomcp
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/protomcp/protomcp/bench/internal/servers"
)

func main() {
	sdk := flag.String("sdk", "protomcp", "server SDK: protomcp or gosdk")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch *sdk {
	case "protomcp":
		s := servers.Protomcp(false)
		err = s.ServeStdio(ctx, os.Stdin, os.Stdout)
		_ = s.Shutdown(context.Background())
	case "gosdk":
		err = servers.GoSDKServer().Run(ctx, &gomcp.StdioTransport{})
	default:
		err = fmt.Errorf("unknown -sdk %q (want protomcp or gosdk)", *sdk)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "server-stdio:", err)
		os.Exit(1)
	}
}
