package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/streamkit/streamkit/storage/atomicfile"
)

// local is a Store over a directory of the local file system, with the crash guarantees of
// package atomicfile.
type local struct {
	root string
	temp atomicfile.Temp
	mode fs.FileMode
}

// tempPattern names the temporary files of a local store: hidden (a leading dot), so that every
// reader skips them — state directories, and `_delta_log`, where Spark and delta-rs list only
// names that start with a version number.
func tempPattern(name string) string { return ".tmp-" + name + "-*" }

// TempPrefix starts the names of a local store's temporary files (".tmp-<name>-<random>"),
// which a crash can leave behind. Listings of the store skip them; cleanup code may remove them.
const TempPrefix = ".tmp-"

func newLocal(dir string, mode fs.FileMode) *local {
	return &local{root: dir, mode: mode, temp: atomicfile.Temp{Pattern: tempPattern, Perm: mode}}
}

// Local returns the store over local directory dir (made absolute), with files created with
// mode perm (0 = 0644). It does not create dir.
func Local(dir string, perm fs.FileMode) (Store, error) {
	if perm == 0 {
		perm = 0o644
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return newLocal(abs, perm), nil
}

// localPath turns a path or file:// URL into an absolute directory.
func localPath(loc string) (string, error) {
	if loc == "" {
		return "", &URLError{URL: loc, Err: errors.New("the path is empty")}
	}
	if scheme, _, ok := strings.Cut(loc, "://"); ok && strings.EqualFold(scheme, "file") {
		u, err := url.Parse(loc)
		if err != nil {
			return "", &URLError{URL: loc, Err: err}
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", &URLError{URL: loc, Err: fmt.Errorf("file URL with host %q; use file:///absolute/path", u.Host)}
		}
		if u.Path == "" {
			return "", &URLError{URL: loc, Err: errors.New("no path")}
		}
		return filepath.Clean(u.Path), nil
	}
	return filepath.Abs(loc)
}

func (l *local) Location() string { return l.root }
func (l *local) LocalDir() string { return l.root }

func (l *local) Sub(dir string) Store {
	return &local{root: filepath.Join(l.root, filepath.FromSlash(dir)), temp: l.temp, mode: l.mode}
}

// path is the absolute path of name, after checking it stays inside the root.
func (l *local) path(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("%s: %w", l.root, err)
	}
	return filepath.Join(l.root, filepath.FromSlash(name)), nil
}

func (l *local) ReadFile(_ context.Context, name string) ([]byte, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

func (l *local) Open(_ context.Context, name string) (File, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("open %s: is a directory", p)
	}
	return &localFile{File: f, size: st.Size()}, nil
}

// localFile is an *os.File with the size it had when opened.
type localFile struct {
	*os.File
	size int64
}

func (f *localFile) Size() int64 { return f.size }

func (l *local) Stat(_ context.Context, name string) (Info, error) {
	p, err := l.path(name)
	if err != nil {
		return Info{}, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return Info{}, err
	}
	return Info{Name: name, Size: st.Size(), ModTime: st.ModTime(), IsDir: st.IsDir()}, nil
}

func (l *local) WriteFile(_ context.Context, name string, data []byte) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := l.mkdirs(filepath.Dir(p)); err != nil {
		return err
	}
	return l.temp.Replace(filepath.Dir(p), filepath.Base(p), data)
}

func (l *local) PutIfAbsent(_ context.Context, name string, data []byte) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := l.mkdirs(filepath.Dir(p)); err != nil {
		return err
	}
	err = l.temp.PutIfAbsent(filepath.Dir(p), filepath.Base(p), data)
	if errors.Is(err, atomicfile.ErrExist) {
		return fmt.Errorf("create %s: %w", p, ErrExist)
	}
	return err
}

// mkdirs creates dir and its missing parents, fsyncing each parent that gained an entry, so a
// new directory survives a crash with the file put into it.
func (l *local) mkdirs(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := l.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(dir))
}

func (l *local) Create(_ context.Context, name string) (Writer, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	if err := l.mkdirs(filepath.Dir(p)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, l.mode)
	if err != nil {
		return nil, err
	}
	return &localWriter{f: f}, nil
}

// localWriter writes the final name directly (O_EXCL): a data file is invisible to readers
// until a commit names it, so no temporary name is needed. Close fsyncs the file and its
// directory.
type localWriter struct {
	f    *os.File
	done bool
}

func (w *localWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

func (w *localWriter) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(w.f.Name()))
	}
	if err != nil {
		os.Remove(w.f.Name())
		return fmt.Errorf("write %s: %w", w.f.Name(), err)
	}
	return nil
}

func (w *localWriter) Abort() {
	if !w.done {
		w.f.Close()
	}
	w.done = true
	os.Remove(w.f.Name())
}

func (l *local) Remove(_ context.Context, name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l *local) ReadDir(_ context.Context, dir string) ([]Info, error) {
	p := l.root
	if dir != "" {
		var err error
		if p, err = l.path(dir); err != nil {
			return nil, err
		}
	}
	ents, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ents))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Info{Name: e.Name(), Size: fi.Size(), ModTime: fi.ModTime(), IsDir: e.IsDir()})
	}
	return out, nil
}

func (l *local) Walk(ctx context.Context, dir string, fn func(Info) error) error {
	base := l.root
	if dir != "" {
		var err error
		if base, err = l.path(dir); err != nil {
			return err
		}
	}
	var names []Info
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == base && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		names = append(names, Info{Name: filepath.ToSlash(rel), Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return err
	}
	// WalkDir's order is lexical per directory ("a/b" before "a.txt"); a bucket lists in byte
	// order of the full name, so sort to give one order on both.
	sort.Slice(names, func(i, j int) bool { return names[i].Name < names[j].Name })
	for _, in := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}
