package stage

import (
	"errors"
	"fmt"
	"io"

	"github.com/streamkit/streamkit/codec"

	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/storage"
)

// ErrInterrupted is returned when a stage stopped on SIGINT/SIGTERM (after finishing the
// current epoch, or at once on a second signal); main maps it to exit code 130.
var ErrInterrupted = errors.New("interrupted")

// UsageError marks a bad command line (flag values, missing arguments); main maps it to exit
// code 2 and prints the hint.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// Exit codes (documented in `streamkit --help`).
const (
	ExitOK          = 0
	ExitError       = 1 // runtime or data error
	ExitUsage       = 2 // bad command line, or options a stage's checkpoint refuses on restart
	ExitInterrupted = 130
)

// ExitCode maps an error returned by a tool to the process exit code: a restart whose
// options differ from those its checkpoint was written with (*state.IncompatibleError) is a
// usage error, as the command line must change (or the checkpoint directory); so is a location
// that no storage backend serves (*storage.URLError).
func ExitCode(err error) int {
	var ue *UsageError
	var ee *ChildExitError
	var ie *state.IncompatibleError
	var le *storage.URLError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.As(err, &ue), errors.As(err, &ie), errors.As(err, &le): // a restart's options that its checkpoint refuses; a malformed location
		return ExitUsage
	}
	return ExitError
}

// ErrStop is returned by an operator that wants the stage to end quietly now (exit 0), e.g.
// print after --limit rows; upstream stages then see a closed pipe and stop too.
var ErrStop = errors.New("stop")

// ChildExitError carries the exit code of a child process (keyby --shards) so the parent exits
// with the same code.
type ChildExitError struct {
	Code int
	Err  error
}

func (e *ChildExitError) Error() string { return e.Err.Error() }
func (e *ChildExitError) Unwrap() error { return e.Err }

// ErrEmptyPipe is the error of a stage whose stdin is a pipe (or a socket) that closed before
// the first byte of an Arrow IPC stream: its writer ended without starting one, which a
// streamkit stage does only when it failed before its first batch (and said why on stderr) or
// was killed (the shell reports that). main exits 1 without a message of its own, so the
// upstream error is the only one on screen (`streamkit generate --bad-flag | streamkit print`);
// data may have vanished, so the exit code is never 0. An empty file or /dev/null on stdin
// keeps the message of codec.ErrNoStream, since nothing else explains it.
var ErrEmptyPipe = errors.New("stdin: the pipe closed before an Arrow IPC stream began (the stage upstream failed, or wrote nothing)")

// InputError is the error of tool when codec.NewReader(stdin) failed with err: ErrEmptyPipe
// for an empty pipe, the "input is empty" message with a hint for other empty input, else err
// prefixed with the tool and "stdin".
func InputError(tool string, stdin io.Reader, err error) error {
	if !errors.Is(err, codec.ErrNoStream) {
		return fmt.Errorf("%s: stdin: %w", tool, err)
	}
	if isPipe(stdin) {
		return ErrEmptyPipe
	}
	return fmt.Errorf("%s: stdin: %w; pipe a streamkit source (read-files, read-kafka …) into it", tool, err)
}
