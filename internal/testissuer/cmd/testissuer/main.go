// Command testissuer runs the in-memory OAuth 2.1 authorization server of package
// internal/testissuer, for trying the weather example's authorization locally. It approves
// every authorization request at once, as -user. Never expose it beyond loopback.
//
//	go run ./internal/testissuer/cmd/testissuer -addr 127.0.0.1:9000
//	go run ./examples/weather/server -auth-issuer http://127.0.0.1:9000
//	go run ./examples/weather/client -login
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/protomcp/protomcp/internal/testissuer"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "loopback address to listen on")
	user := flag.String("user", "alice", "the user every authorization is approved for")
	scopes := flag.String("scopes", "", "space-separated scopes_supported to advertise")
	flag.Parse()
	is, err := testissuer.Start(testissuer.WithAddr(*addr), testissuer.WithSubject(*user), testissuer.WithScopes(strings.Fields(*scopes)...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "testissuer:", err)
		os.Exit(1)
	}
	fmt.Println(is.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	is.Close()
}
