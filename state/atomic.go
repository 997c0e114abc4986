// Package state is streamkit's checkpoint store (DESIGN.md §3): a locked directory per stage
// holding metadata.json, the sources' offsets write-ahead log, operators' keyed state as Arrow
// IPC changelogs and snapshots, and commit markers written by sinks. Every file is written
// atomically and carries a CRC32C that is verified on load.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"

	"github.com/streamkit/streamkit/storage"
	"github.com/streamkit/streamkit/storage/atomicfile"
)

// castagnoli is the CRC32C table (iSCSI polynomial), hardware-accelerated on amd64/arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC32C (Castagnoli) checksum of b.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// tmpPrefix starts the name of every temporary file; Open sweeps leftovers.
const tmpPrefix = ".tmp-"

// CorruptError reports a checkpoint file that is torn, truncated or fails its checksum.
// Callers branch on it with errors.As; the file is never half-read.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt checkpoint file %s: %s", e.Path, e.Reason)
}

// WriteFileAtomic makes data the content of dir/name atomically (dir is a checkpoint
// location): on a local disk temp file in dir, write, fsync, rename over name, fsync dir; on a
// bucket one object write, which replaces the object whole. A crash at any point leaves
// either the old file or the new one, never a mix. Errors name the path.
func WriteFileAtomic(dir, name string, data []byte) error {
	st, err := openLoc("write", dir)
	if err != nil {
		return err
	}
	return st.WriteFile(bg, name, data)
}

// PutIfAbsent creates dir/name with data only if it does not exist, atomically (a hard link
// of an fsynced temp file on a local disk, a conditional write on a bucket). created is false
// when the name already existed; nothing is replaced.
func PutIfAbsent(dir, name string, data []byte) (created bool, err error) {
	st, err := openLoc("write", dir)
	if err != nil {
		return false, err
	}
	err = st.PutIfAbsent(bg, name, data)
	if errors.Is(err, storage.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// SyncDir fsyncs a local directory so that renames and links in it are durable
// ([atomicfile.SyncDir]); on a bucket it does nothing (an object is durable once written).
func SyncDir(dir string) error {
	if storage.IsURL(dir) {
		return nil
	}
	return atomicfile.SyncDir(dir)
}

// sweepTemps removes temporary files left by a crash in a local checkpoint directory and its
// direct subdirectories. A bucket has none: an object write is never half-visible.
func sweepTemps(st storage.Store) {
	dir := st.LocalDir()
	if dir == "" {
		return
	}
	for _, d := range []string{dir, filepath.Join(dir, OffsetsDir), filepath.Join(dir, StateDir), filepath.Join(dir, CommitsDir)} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
}

// envelope is the on-disk form of every JSON checkpoint file: the payload and its CRC32C
// (8 lower-case hex digits over the exact payload bytes), so `jq .data` reads it directly.
type envelope struct {
	CRC32C string          `json:"crc32c"`
	Data   json.RawMessage `json:"data"`
}

// EncodeJSON returns v in a checksummed envelope {"crc32c":"…","data":v}.
func EncodeJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(envelope{CRC32C: fmt.Sprintf("%08x", CRC32C(data)), Data: data})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteJSON writes v atomically as a checksummed JSON envelope to dir/name (dir is a
// checkpoint location).
func WriteJSON(dir, name string, v any) error {
	st, err := openLoc("write", dir)
	if err != nil {
		return err
	}
	return WriteJSONAt(st, name, v)
}

// WriteJSONAt writes v atomically as a checksummed JSON envelope to object name of st.
func WriteJSONAt(st storage.Store, name string, v any) error {
	b, err := EncodeJSON(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", where(st, name), err)
	}
	return st.WriteFile(bg, name, b)
}

// ReadJSON reads a checksummed JSON envelope from the file location path into v. A torn,
// truncated or altered file yields *CorruptError naming path; a missing file an error
// matching os.ErrNotExist.
func ReadJSON(path string, v any) error {
	dir, name := splitLoc(path)
	st, err := openLoc("read", dir)
	if err != nil {
		return err
	}
	return ReadJSONAt(st, name, v)
}

// ReadJSONAt is ReadJSON for object name of st.
func ReadJSONAt(st storage.Store, name string, v any) error {
	b, err := st.ReadFile(bg, name)
	if err != nil {
		return err
	}
	return DecodeJSON(where(st, name), b, v)
}

// DecodeJSON verifies and decodes an envelope read from path (used in error messages).
func DecodeJSON(path string, b []byte, v any) error {
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&env); err != nil {
		return &CorruptError{Path: path, Reason: "not a complete checksummed JSON document: " + err.Error()}
	}
	if env.CRC32C == "" || env.Data == nil {
		return &CorruptError{Path: path, Reason: "missing crc32c or data"}
	}
	if got := fmt.Sprintf("%08x", CRC32C(env.Data)); got != env.CRC32C {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("checksum mismatch (stored %s, computed %s)", env.CRC32C, got)}
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return &CorruptError{Path: path, Reason: "payload: " + err.Error()}
	}
	return nil
}
