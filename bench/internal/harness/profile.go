package harness

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// Profile starts a CPU profile and an execution trace, each when its file name is not empty,
// and returns the function that stops both. A file that cannot be written ends the program:
// a measurement asked to be profiled is not run without its profile.
func Profile(cpuFile, traceFile string) (stop func()) {
	var stops []func()
	if cpuFile != "" {
		f := create(cpuFile)
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if traceFile != "" {
		f := create(traceFile)
		if err := trace.Start(f); err != nil {
			fail(err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

func create(name string) *os.File {
	f, err := os.Create(name)
	if err != nil {
		fail(err)
	}
	return f
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "profile: %v\n", err)
	os.Exit(1)
}
