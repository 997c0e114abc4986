// Command streamkit is a toolkit of composable stream tools that exchange Arrow IPC streams.
package main

import (
	_ "github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/apache/arrow-go/v18/arrow/compute"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/google/uuid"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
)

func main() {}
