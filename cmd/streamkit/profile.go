package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
)

// startCPUProfile starts a CPU profile into the file named by the hidden environment variable
// STREAMKIT_CPUPROFILE (for benchmarks: `go tool pprof bin/streamkit FILE`; in a pipeline give
// each stage its own file, `STREAMKIT_CPUPROFILE=dedup.prof streamkit dedup …`). It returns the
// function that stops the profile and closes the file; without the variable it does nothing.
// In a keyby --shards child (STREAMKIT_SHARD=i) the file name gets ".shard-i" appended, so
// the shards of one command do not overwrite each other's profile. Stopping logs the CPU time of
// the process and of its reaped children (user and system seconds) to stderr.
// A file that cannot be created is reported on stderr and the run goes on unprofiled.
//
// STREAMKIT_TRACE names a file for a runtime execution trace of the run in the same way
// (`go tool trace FILE`; `go tool trace -pprof=sync FILE` shows where goroutines waited).
func startCPUProfile() (stop func()) {
	stopTrace := startTrace()
	path := os.Getenv("STREAMKIT_CPUPROFILE")
	if path == "" {
		return stopTrace
	}
	if shard := os.Getenv("STREAMKIT_SHARD"); shard != "" {
		path += ".shard-" + shard
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "streamkit: STREAMKIT_CPUPROFILE: %v\n", err)
		return stopTrace
	}
	return func() {
		stopTrace()
		pprof.StopCPUProfile()
		f.Close()
		var self, children syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
		fmt.Fprintf(os.Stderr, "streamkit: cpu profile %s: user %.2f s, system %.2f s (child processes: user %.2f s, system %.2f s)\n",
			path, seconds(self.Utime), seconds(self.Stime), seconds(children.Utime), seconds(children.Stime))
	}
}

func seconds(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// startTrace starts the execution trace STREAMKIT_TRACE asks for (see startCPUProfile).
func startTrace() (stop func()) {
	path := os.Getenv("STREAMKIT_TRACE")
	if path == "" {
		return func() {}
	}
	if shard := os.Getenv("STREAMKIT_SHARD"); shard != "" {
		path += ".shard-" + shard
	}
	f, err := os.Create(path)
	if err == nil {
		if err = trace.Start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "streamkit: STREAMKIT_TRACE: %v\n", err)
		return func() {}
	}
	return func() {
		trace.Stop()
		f.Close()
	}
}
