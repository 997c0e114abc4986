package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/streamkit/streamkit/stage"
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
	// An invalid shard environment fails the stage itself (stage.Options.ResolveShard); the
	// files are then named as outside shards.
	shard, _ := stage.LoadShardEnv(os.Getenv)
	stopTrace := startRecording("STREAMKIT_TRACE", shard.Index, trace.Start, trace.Stop, nil)
	stopProfile := startRecording("STREAMKIT_CPUPROFILE", shard.Index, pprof.StartCPUProfile, pprof.StopCPUProfile, func(path string) {
		var self, children syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
		fmt.Fprintf(os.Stderr, "streamkit: cpu profile %s: user %.2f s, system %.2f s (child processes: user %.2f s, system %.2f s)\n",
			path, seconds(self.Utime), seconds(self.Stime), seconds(children.Utime), seconds(children.Stime))
	})
	return func() {
		stopTrace()
		stopProfile()
	}
}

func seconds(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// startRecording starts a recording (start/stop: a CPU profile or an execution trace) into the
// file the environment variable env names (with ".shard-i" in keyby shard i), and returns what
// stops it, closes the file and then calls done with its path (done may be nil). Without the
// variable, or when the file cannot be created, it does nothing (the latter is reported).
func startRecording(env, shard string, start func(io.Writer) error, stop func(), done func(path string)) func() {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	if shard != "" {
		path += ".shard-" + shard
	}
	f, err := os.Create(path)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "streamkit: %s: %v\n", env, err)
		return func() {}
	}
	return func() {
		stop()
		f.Close()
		if done != nil {
			done(path)
		}
	}
}
