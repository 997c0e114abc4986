// Package atomicfile writes files that appear whole or not at all, on a local POSIX file
// system: the checkpoint files of package state (docs/protocol.md §7.2) and the commits and
// checkpoints of the Delta log (shared DELTA.md "Log and atomic commits").
//
// Both ways start the same: the data goes to a temporary file in the target's directory, which
// is fsynced and closed. [Temp.Replace] then renames it over the final name (a crash leaves
// the old content or the new one, never a mix); [Temp.PutIfAbsent] hard-links it to the final
// name, which fails with EEXIST when the name exists, so an existing file is never replaced
// and no reader sees a partial one (DELTA.md: never rename onto a commit, never O_EXCL-create
// the final name). Either way the directory is fsynced last ([SyncDir]), so the new name is
// durable before the call returns.
//
// Temporary files stay in the target's directory (a rename or link across directories could
// cross file systems). Their names come from the caller's [Temp], so that every reader of
// that directory skips them: `.tmp-<name>-<random>` for package storage's local store, in a
// state directory and in `_delta_log` alike (delta-rs and Spark list only names that start
// with a version number; older streamkit versions used `_commit_*` and `_tmp_*` there).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrExist is returned by [Temp.PutIfAbsent] when the final name already exists; nothing was
// written then.
var ErrExist = errors.New("file already exists")

// Temp names and creates the temporary files of one kind of atomic file.
type Temp struct {
	// Pattern is the temporary file's name for the final name; its first "*" becomes a random
	// number (os.CreateTemp's convention). Readers of the directory must ignore such names.
	Pattern func(name string) string
	// Perm is the mode the file is created with (before the umask), which the final name
	// keeps: 0600 for private checkpoint files, 0644 for a table that other readers open.
	Perm fs.FileMode
}

// Replace makes data the content of dir/name atomically: temporary file in dir, write, fsync,
// rename over name, fsync dir. A crash at any point leaves either the old file or the new one.
// Errors name dir/name (or dir, for the directory fsync).
func (t Temp) Replace(dir, name string, data []byte) error {
	tmp, err := t.write(dir, name, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return SyncDir(dir)
}

// PutIfAbsent creates dir/name with data only if the name does not exist, atomically: an
// fsynced temporary file in dir is hard-linked to name, then removed, then dir is fsynced.
// It returns ErrExist when name existed (another writer won); nothing is replaced.
func (t Temp) PutIfAbsent(dir, name string, data []byte) error {
	tmp, err := t.write(dir, name, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, filepath.Join(dir, name)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ErrExist
		}
		return fmt.Errorf("create %s: %w", filepath.Join(dir, name), err)
	}
	// name holds the data now; a temporary file that fails to go is only a second name for
	// it, which readers skip, so that is no error.
	os.Remove(tmp)
	return SyncDir(dir)
}

// write creates the temporary file for dir/name (O_EXCL, mode t.Perm), writes data, fsyncs
// and closes it, and returns its path; on error it removes it.
func (t Temp) write(dir, name string, data []byte) (string, error) {
	f, err := t.create(dir, name)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return tmp, nil
}

// create opens a new temporary file for name in dir as os.CreateTemp does (the "*" of the
// pattern becomes a random number, retried while the name exists), but with mode t.Perm.
func (t Temp) create(dir, name string) (*os.File, error) {
	prefix, suffix, _ := strings.Cut(t.Pattern(name), "*")
	for try := 0; ; try++ {
		p := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, t.Perm)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}

// SyncDir fsyncs directory dir, so that the renames, links and creations in it are durable.
// Errors name dir.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
