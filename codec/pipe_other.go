//go:build !linux

package codec

import "os"

// PipeSize is the pipe capacity streamkit asks for on Linux.
const PipeSize = 1 << 20

// TunePipe does nothing outside Linux.
func TunePipe(*os.File) int { return 0 }
