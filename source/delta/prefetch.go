package delta

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/streamkit/streamkit/storage"
)

// On a bucket every ReadAt of a storage.File is one ranged GET. arrow-go's Parquet reader
// makes one ReadAt per column chunk it decodes and two for the footer, so a file of 100 row
// groups × 5 columns would cost 500 requests of a few hundred KiB each. The prefetcher
// coalesces them the way Arrow C++'s pre-buffering (ReadRangeCache) does: before a work unit
// is decoded, the column chunks of its row groups and columns are fetched in as few ranges as
// possible (neighbours up to prefetchHole apart are merged, a range stops growing at
// prefetchMaxRange), and the footer comes from one read of the file's tail.
const (
	prefetchHole     = 1 << 20  // bytes of gap read rather than starting another request
	prefetchMaxRange = 64 << 20 // bytes per coalesced range at most
	prefetchTail     = 64 << 10 // bytes read at the end of the file for the footer
	// prefetchPad is added to each column chunk: arrow-go pads the chunks of files written by
	// parquet-mr before PARQUET-816 by up to this much (maxDictHeaderSize).
	prefetchPad = 100
)

// open opens data file rel: through the os.Root of a local table (a symlink cannot escape it;
// reads go straight to the file), or through the store with a prefetcher in front.
func (r *Reader) open(ctx context.Context, fc *fileCtx, rel string) (parquet.ReaderAtSeeker, error) {
	if r.rt != nil {
		f, err := r.rt.Open(filepath.FromSlash(rel))
		if err != nil {
			return nil, err
		}
		fc.f = f
		return f, nil
	}
	f, err := r.store.Open(ctx, rel)
	if err != nil {
		return nil, err
	}
	fc.f = f
	fc.pre = &prefetcher{f: f}
	return fc.pre, nil
}

// prefetcher is a storage.File whose ReadAt is served from the ranges fetched for the work
// units being decoded when it falls inside one, and from the file otherwise.
type prefetcher struct {
	f  storage.File
	md *metadata.FileMetaData // set once the footer was read

	mu      sync.Mutex
	tail    []byte // the file's last bytes, from tailOff
	tailOff int64
	spans   []*span
}

type span struct {
	off  int64
	data []byte
}

func (p *prefetcher) Seek(off int64, whence int) (int64, error) { return p.f.Seek(off, whence) }
func (p *prefetcher) Close() error                              { return p.f.Close() }

func (p *prefetcher) ReadAt(b []byte, off int64) (int, error) {
	end := off + int64(len(b))
	size := p.f.Size()
	p.mu.Lock()
	if p.tail == nil && end == size && len(b) <= prefetchTail {
		// The footer's length word: read the tail once, which also holds the footer itself.
		n := min(size, prefetchTail)
		t := make([]byte, n)
		if _, err := p.f.ReadAt(t, size-n); err != nil && err != io.EOF {
			p.mu.Unlock()
			return 0, err
		}
		p.tail, p.tailOff = t, size-n
	}
	if p.tail != nil && off >= p.tailOff && end <= size {
		n := copy(b, p.tail[off-p.tailOff:])
		p.mu.Unlock()
		return n, nil
	}
	for _, s := range p.spans {
		if off >= s.off && end <= s.off+int64(len(s.data)) {
			n := copy(b, s.data[off-s.off:])
			p.mu.Unlock()
			return n, nil
		}
	}
	p.mu.Unlock()
	return p.f.ReadAt(b, off)
}

// fetch reads the column chunks of leaves in rowGroups in coalesced ranges and keeps them
// until done is called (after the unit is decoded).
func (p *prefetcher) fetch(leaves, rowGroups []int) (done func(), err error) {
	type rng struct{ off, end int64 }
	size := p.f.Size()
	var rs []rng
	for _, rg := range rowGroups {
		rgm := p.md.RowGroup(rg)
		for _, leaf := range leaves {
			cc, err := rgm.ColumnChunk(leaf)
			if err != nil {
				return nil, err
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && start > cc.DictionaryPageOffset() {
				start = cc.DictionaryPageOffset()
			}
			end := min(start+cc.TotalCompressedSize()+prefetchPad, size)
			if start < 0 || end <= start {
				continue // invalid metadata: left to the Parquet reader to report
			}
			rs = append(rs, rng{start, end})
		}
	}
	slices.SortFunc(rs, func(a, b rng) int { return int(a.off - b.off) })
	var merged []rng
	for _, r := range rs {
		if n := len(merged); n > 0 && r.off <= merged[n-1].end+prefetchHole && max(r.end, merged[n-1].end)-merged[n-1].off <= prefetchMaxRange {
			merged[n-1].end = max(merged[n-1].end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	got := make([]*span, 0, len(merged))
	for _, r := range merged {
		s := &span{off: r.off, data: make([]byte, r.end-r.off)}
		if _, err := p.f.ReadAt(s.data, r.off); err != nil && err != io.EOF {
			return nil, err
		}
		got = append(got, s)
	}
	p.mu.Lock()
	p.spans = append(p.spans, got...)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.spans = slices.DeleteFunc(p.spans, func(s *span) bool { return slices.Contains(got, s) })
	}, nil
}
