package backfill

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/source/files"
	"github.com/streamkit/streamkit/stage"
)

// SetFiles makes the files matched by patterns, read with fc (source/files options; its
// Patterns are replaced), the source of c: Files and FilesDesc.
func (c *Config) SetFiles(fc files.Config, patterns []string) {
	fc.Patterns = patterns
	c.FilesDesc = patterns
	c.Files = func(ctx context.Context, env *stage.Env) (stage.Source, error) {
		src, err := files.New(fc)
		if err != nil {
			return nil, err
		}
		return src, nil
	}
}

// sourceInput drives a stage.Source (read-files) in-process, without a checkpoint directory:
// a backfill is one atomic commit, so it needs no epochs — a run that dies commits nothing and
// the next run reads every file again.
type sourceInput struct {
	src    stage.Source
	schema *arrow.Schema
	desc   []string
	rows   int64
}

func openFiles(ctx context.Context, cfg Config) (*sourceInput, error) {
	env := &stage.Env{Mem: cfg.Mem, Now: cfg.Now, Log: cfg.Log, BatchRows: 64 * 1024, Stats: &stage.Stats{}}
	if env.Log == nil {
		env.Log = slog.Default()
	}
	src, err := cfg.Files(ctx, env)
	if err != nil {
		return nil, err
	}
	sc, err := src.Open(ctx, env, nil)
	if err != nil {
		src.Close()
		return nil, err
	}
	return &sourceInput{src: src, schema: sc, desc: cfg.FilesDesc}, nil
}

func (s *sourceInput) Schema() *arrow.Schema { return s.schema }

func (s *sourceInput) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		rec, err := s.src.Read(ctx, nil)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			s.rows += rec.NumRows()
			return rec, nil
		}
		if l, ok := s.src.(stage.EpochLimiter); ok && l.EpochFull() {
			l.EpochCut() // no epochs here: keep reading
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (s *sourceInput) TotalRows() int64 { return -1 }

// Describe lists the files read so far (from the source's position: its epoch's file list,
// which is every file since a backfill never cuts an epoch); rows per file are not known.
func (s *sourceInput) Describe() *planSource {
	ps := &planSource{Kind: "files", Patterns: s.desc, Rows: s.rows}
	var pos struct {
		Files []struct {
			Path string `json:"path"`
			Size int64  `json:"size"`
		} `json:"files"`
	}
	if json.Unmarshal(s.src.Position(), &pos) == nil {
		for _, f := range pos.Files {
			ps.Files = append(ps.Files, planFile{Path: f.Path, Rows: -1, Bytes: f.Size})
			ps.Bytes += f.Size
		}
		ps.NumFiles = len(ps.Files)
	}
	return ps
}

func (s *sourceInput) Close() { s.src.Close() }
