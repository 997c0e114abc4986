package statedump

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/source/kafka"
	"github.com/streamkit/streamkit/state"
)

// watermarkOf renders the watermark of a manifest's extra, "" when there is none.
func watermarkOf(extra json.RawMessage) string {
	wm, ok := watermarkUS(extra)
	if !ok {
		return ""
	}
	return codec.FormatWatermark(time.UnixMicro(wm))
}

// positionText renders a source position (an offsets WAL entry) for people: Kafka offsets
// per partition, the files cursor, a generator's next row, a Delta version; other shapes as
// their JSON.
func positionText(tool string, raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	switch tool {
	case "read-kafka":
		var o kafka.Offsets
		if json.Unmarshal(raw, &o) == nil {
			var b strings.Builder
			last := ""
			for _, tp := range o.Sorted() {
				if tp.Topic != last {
					if last != "" {
						b.WriteString(" ")
					}
					b.WriteString(tp.Topic + " ")
					last = tp.Topic
				} else {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%d:%d", tp.Partition, o[tp])
			}
			if len(o) == 0 {
				return "no partitions"
			}
			return b.String()
		}
	case "read-files":
		var p filesPosition
		if json.Unmarshal(raw, &p) == nil {
			s := fmt.Sprintf("next file #%d", p.Next)
			if p.Row > 0 {
				s = fmt.Sprintf("file #%d from row %d", p.Next, p.Row)
			}
			return fmt.Sprintf("%s, %d file(s) in the epoch", s, len(p.Files))
		}
	case "generate":
		var p struct {
			Next *int64 `json:"next"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Next != nil {
			return fmt.Sprintf("next row %d", *p.Next)
		}
	case "read-delta":
		var p struct {
			Version *int64 `json:"version"`
			Initial bool   `json:"initial"`
			File    int    `json:"file"`
			Row     int64  `json:"row"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Version != nil {
			s := fmt.Sprintf("version %d", *p.Version)
			if p.Initial {
				s = fmt.Sprintf("initial snapshot of version %d", *p.Version)
			}
			if p.File > 0 || p.Row > 0 {
				s += fmt.Sprintf(" (file %d, row %d)", p.File, p.Row)
			}
			return s
		}
	}
	return string(raw)
}

// stageLine is one row of the root listing.
type stageLine struct {
	Stage     string          `json:"stage"`
	Tool      string          `json:"tool"`
	Committed uint64          `json:"committed_epoch"`
	Epochs    int             `json:"epochs_retained"`
	Keys      *int64          `json:"state_keys,omitempty"`
	Watermark string          `json:"watermark,omitempty"`
	Position  json.RawMessage `json:"position,omitempty"`
	Updated   time.Time       `json:"updated"`
	Errors    []string        `json:"errors,omitempty"`
}

func lineOf(name string, s *state.Summary) stageLine {
	l := stageLine{Stage: name, Committed: s.Committed, Epochs: len(s.Epochs), Errors: s.Errors}
	if s.Meta != nil {
		l.Tool = s.Meta.Tool
	}
	for _, e := range s.Epochs {
		if e.Time.After(l.Updated) {
			l.Updated = e.Time
		}
		if e.Epoch == s.Committed {
			l.Keys = e.Entries
			l.Watermark = watermarkOf(e.Extra)
			l.Position = e.Offsets
		}
	}
	return l
}

func listStages(cfg Config, root string, out io.Writer) error {
	stages, err := state.Stages(root)
	if err != nil {
		return fmt.Errorf("state-dump: %w", err)
	}
	if len(stages) == 0 {
		return fmt.Errorf("state-dump: %s holds no stage checkpoint (no */%s)", root, state.MetadataFile)
	}
	var lines []stageLine
	for _, name := range stages {
		s, err := state.Inspect(state.Join(root, name))
		if err != nil {
			lines = append(lines, stageLine{Stage: name, Errors: []string{err.Error()}})
			continue
		}
		lines = append(lines, lineOf(name, s))
	}
	if cfg.Format == FormatJSON {
		enc := json.NewEncoder(out)
		for _, l := range lines {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
		return nil
	}
	style := styles(cfg.Color)
	fmt.Fprintln(out, style.title.Render("checkpoint "+root))
	for _, l := range lines {
		keys := "-"
		if l.Keys != nil {
			keys = strconv.FormatInt(*l.Keys, 10)
		}
		fmt.Fprintf(out, "  %s %s  committed epoch %d  (%d retained)  keys %s", style.name.Render(fmt.Sprintf("%-14s", l.Stage)),
			style.dim.Render(fmt.Sprintf("%-12s", l.Tool)), l.Committed, l.Epochs, keys)
		if l.Watermark != "" {
			fmt.Fprintf(out, "  watermark %s", l.Watermark)
		}
		if p := positionText(l.Tool, l.Position); p != "" {
			fmt.Fprintf(out, "  position %s", abbreviate(p, 60))
		}
		fmt.Fprintln(out)
		for _, e := range l.Errors {
			fmt.Fprintln(out, "    "+style.err.Render("error: "+e))
		}
	}
	return nil
}

func abbreviate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

type styleSet struct{ title, name, dim, err lipgloss.Style }

func styles(color bool) styleSet {
	s := styleSet{lipgloss.NewStyle(), lipgloss.NewStyle(), lipgloss.NewStyle(), lipgloss.NewStyle()}
	if color {
		s.title = s.title.Bold(true)
		s.name = s.name.Bold(true).Foreground(lipgloss.Color("6"))
		s.dim = s.dim.Foreground(lipgloss.Color("8"))
		s.err = s.err.Foreground(lipgloss.Color("1"))
	}
	return s
}

// errCorrupt is returned (exit 1) after a summary that shows corrupt files.
var errCorrupt = errors.New("state-dump: some checkpoint files are corrupt (see above)")

func summary(cfg Config, path string, out io.Writer) error {
	s, err := state.Inspect(path)
	if err != nil {
		return fmt.Errorf("state-dump: %w", err)
	}
	var quality *expectQuality
	if s.Meta != nil && s.Meta.Tool == "expect" {
		q, err := expectQualityOf(cfg, path, s)
		if err != nil {
			return err
		}
		quality = &q
	}
	if cfg.Format == FormatJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		var doc any = s
		if quality != nil {
			doc = struct {
				*state.Summary
				*expectQuality
			}{s, quality}
		}
		if err := enc.Encode(doc); err != nil {
			return err
		}
		if len(s.Errors) > 0 {
			return errCorrupt
		}
		return nil
	}
	style := styles(cfg.Color)
	tool := ""
	fmt.Fprintln(out, style.title.Render("stage "+path))
	if s.Meta != nil {
		tool = s.Meta.Tool
		fmt.Fprintf(out, "  tool         %s (name %s)\n", s.Meta.Tool, s.Meta.Name)
		for _, k := range sortedKeys(s.Meta.Options) {
			if v := s.Meta.Options[k]; v != "" && v != "0s" {
				fmt.Fprintf(out, "  option       %s = %s\n", k, strings.ReplaceAll(v, "\n", "; "))
			}
		}
		fp := s.Meta.Fingerprint
		if len(fp) > 16 {
			fp = fp[:16]
		}
		fmt.Fprintf(out, "  fingerprint  %s\n", fp)
	}
	fmt.Fprintf(out, "  committed    epoch %d\n", s.Committed)
	fmt.Fprintln(out, style.dim.Render("  epoch  committed  written               bytes    keys      watermark                     position"))
	for _, e := range s.Epochs {
		keys := ""
		if e.Entries != nil {
			keys = strconv.FormatInt(*e.Entries, 10)
			if e.Snapshot {
				keys += "*"
			}
		}
		c := "no"
		if e.Committed {
			c = "yes"
		}
		written := ""
		if !e.Time.IsZero() {
			written = e.Time.Format("2006-01-02 15:04:05Z")
		}
		line := fmt.Sprintf("  %-6d %-10s %-21s %-8d %-9s %-29s %s", e.Epoch, c, written, e.Bytes, keys,
			watermarkOf(e.Extra), abbreviate(positionText(tool, e.Offsets), 60))
		fmt.Fprintln(out, strings.TrimRight(line, " "))
		if e.Error != "" {
			fmt.Fprintln(out, "    "+style.err.Render("error: "+e.Error))
		}
	}
	shown, snapshots := map[string]bool{}, false
	for _, e := range s.Epochs {
		shown[e.Error] = true
		snapshots = snapshots || e.Snapshot
	}
	if snapshots {
		fmt.Fprintln(out, style.dim.Render("  (* = full snapshot)"))
	}
	if quality != nil {
		printExpectQuality(out, style, *quality)
	}
	for _, e := range s.Errors {
		if !shown[e] {
			fmt.Fprintln(out, "  "+style.err.Render("error: "+e))
		}
	}
	if len(s.Errors) > 0 {
		return errCorrupt
	}
	return nil
}
