package stage

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/streamkit/streamkit/state"
)

// The environment variables below are the wire between `keyby --shards` and its children:
// keyby sets them for each child process (tools/keyby childEnv), and a child resolves them once,
// at stage start, into a ShardEnv (LoadShardEnv, Options.ResolveShard) that the stage passes
// down (Options.Shard, Env.Shard). Nothing else reads them (docs/protocol.md §6).
const (
	// EnvCheckpoint names the environment variable whose value is a checkpoint root: a stage
	// without --checkpoint keeps its checkpoint in $STREAMKIT_CHECKPOINT/<stage name>. The
	// user sets it (for every stage of a pipeline); keyby's children inherit it.
	EnvCheckpoint = "STREAMKIT_CHECKPOINT"

	// EnvShard is set by `keyby --shards` for each child process to its shard index; a stage
	// running as shard i keeps its checkpoint in "<dir>.shard-i".
	EnvShard = "STREAMKIT_SHARD"

	// EnvShardCommits is set by `keyby --shards` for its children to a directory in which a
	// sink child i records the epochs it committed (<dir>/<i>/commits, as in a checkpoint
	// directory) instead of writing commit markers into the upstream stages' directories:
	// keyby writes those for the epochs that every shard has committed. Otherwise the fastest
	// shard would mark upstream sources committed past epochs a slower shard has not committed
	// yet, and a restart after a crash would not replay them to it (DESIGN.md §3: upstream
	// markers may lag, never lead).
	EnvShardCommits = "STREAMKIT_SHARD_COMMITS"

	// EnvShardRoute is set by `keyby --shards` for its children to how rows are routed: "<N>
	// by <hash>(<key>)" (ShardRoute). A child records "<i>/<route>" as the option "shard" of
	// its checkpoint, so a restart that routes other keys to it (another --shards or key) is
	// refused, as keyby's own checkpoint refuses it; otherwise the shard's state, or the
	// epochs its sink already holds, would not match the rows it now gets.
	EnvShardRoute = "STREAMKIT_SHARD_ROUTE"

	// EnvShardPath is set by a `keyby --shards` that is itself a shard of an outer one, for
	// its children: the outer shards' names and the child's index, dot-separated ("1.0": child
	// 0 of the inner keyby in outer shard 1). It names what a shard owns (its checkpoint
	// directory, side-output file, Delta flow) so that nested shards do not collide; see
	// ShardEnv.Name.
	EnvShardPath = "STREAMKIT_SHARD_PATH"

	// EnvShardProgress is set (to 1) by `keyby --shards` for a child that is a streamkit tool
	// named as the child command: keyby sends such a child the stream's event-time progress
	// (codec.Progress) when the child declares its event-time column in its output schema
	// (codec.SchemaShardEventTime, dedup --event-time). A shard that generates its watermark
	// from event times without it (a tool behind a foreign command, e.g. sh -c) sees only its
	// own rows' event times.
	EnvShardProgress = "STREAMKIT_SHARD_PROGRESS"
)

// ShardEnv is what the environment tells a stage about its place among the shards of keyby
// --shards (and its checkpoint root), read once by LoadShardEnv. The zero value is a stage
// that is no shard and has no checkpoint root.
type ShardEnv struct {
	// Index is EnvShard: this child's index i (0 ≤ i < N) in decimal; "" outside shards.
	Index string
	// Path is EnvShardPath: the dot-separated shard names of a nested shard ("1.0"); "" when
	// the shard is not nested.
	Path string
	// Route is EnvShardRoute: how keyby routes rows to its shards, "<N> by <hash>(<key,...>)";
	// "" when keyby did not say.
	Route string
	// Commits is EnvShardCommits: the directory under which a sink shard records its commits
	// (<Commits>/<Index>/commits); "" when keyby did not give one.
	Commits string
	// Progress is EnvShardProgress set (keyby writes 1): keyby sends this child event-time
	// progress when it declares its event time (see EnvShardProgress).
	Progress bool
	// CheckpointRoot is EnvCheckpoint: the checkpoint root of stages without --checkpoint; ""
	// for none.
	CheckpointRoot string
}

// LoadShardEnv reads the shard environment with getenv (os.Getenv) and validates it. Without
// EnvShard the stage is no shard and the other shard variables are ignored, as stages always
// did (a leftover export in a shell must not change or stop a stage). With EnvShard, which
// only keyby sets: EnvShard a decimal index, EnvShardPath dot-separated indexes ending in it,
// EnvShardRoute a ShardRoute value whose N is above the index; EnvShardProgress set to
// anything (keyby writes "1") asks for progress. Errors are usage errors naming the variable.
func LoadShardEnv(getenv func(string) string) (ShardEnv, error) {
	s := ShardEnv{
		Index:          getenv(EnvShard),
		Path:           getenv(EnvShardPath),
		Route:          getenv(EnvShardRoute),
		Commits:        getenv(EnvShardCommits),
		CheckpointRoot: getenv(EnvCheckpoint),
	}
	bad := func(name, value, want string) error {
		return Usagef("$%s=%q is not %s (keyby --shards sets it for its children)", name, value, want)
	}
	if s.Index == "" {
		return ShardEnv{CheckpointRoot: s.CheckpointRoot}, nil
	}
	s.Progress = getenv(EnvShardProgress) != ""
	index, err := strconv.Atoi(s.Index)
	if err != nil || index < 0 || strconv.Itoa(index) != s.Index {
		return ShardEnv{}, bad(EnvShard, s.Index, "a shard index (0, 1, …)")
	}
	if s.Path != "" {
		parts := strings.Split(s.Path, ".")
		for _, p := range parts {
			if n, err := strconv.Atoi(p); err != nil || n < 0 || strconv.Itoa(n) != p {
				return ShardEnv{}, bad(EnvShardPath, s.Path, "dot-separated shard indexes")
			}
		}
		if len(parts) < 2 || parts[len(parts)-1] != s.Index {
			return ShardEnv{}, bad(EnvShardPath, s.Path, "the outer shards' names followed by $"+EnvShard)
		}
	}
	if s.Route != "" {
		n, key, ok := parseRoute(s.Route)
		if !ok {
			return ShardEnv{}, bad(EnvShardRoute, s.Route, `"<N> by <hash>(<key,...>)"`)
		}
		if index >= n || key == nil {
			return ShardEnv{}, bad(EnvShardRoute, s.Route, fmt.Sprintf("a routing to more than %d shards by a key", index))
		}
	}
	return s, nil
}

// ShardRoute formats the value of EnvShardRoute: "<n> by <hash>(<key,...>)"; parseRoute reads
// it back.
func ShardRoute(n int, hash string, key []string) string {
	return strconv.Itoa(n) + " by " + hash + "(" + strings.Join(key, ",") + ")"
}

// parseRoute reads a ShardRoute value: the shard count and the key (nil when empty).
func parseRoute(route string) (n int, key []string, ok bool) {
	count, rest, found := strings.Cut(route, " by ")
	open, end := strings.Index(rest, "("), strings.LastIndex(rest, ")")
	if !found || open <= 0 || end != len(rest)-1 {
		return 0, nil, false
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return 0, nil, false
	}
	if k := rest[open+1 : end]; k != "" {
		key = strings.Split(k, ",")
	}
	return n, key, true
}

// IsShard reports whether the stage runs as a child of keyby --shards.
func (s ShardEnv) IsShard() bool { return s.Index != "" }

// Name is this process's name as a shard of keyby --shards: Path when set (a nested shard),
// else Index; "" outside shards.
func (s ShardEnv) Name() string {
	if s.Path != "" {
		return s.Path
	}
	return s.Index
}

// CheckKey refuses, in a child of keyby --shards, an operator key (dot paths; nil: all
// columns) that does not contain the routing key of Route: equal keys would then reach
// different shards and each shard would keep its own row or window. A routing path is
// contained when the key holds it or a struct above it. what names the flag ("dedup: --key").
// Outside a shard it returns nil. Errors are usage errors.
func (s ShardEnv) CheckKey(what string, key []string) error {
	_, routed, _ := parseRoute(s.Route)
	if !s.IsShard() || key == nil || routed == nil {
		return nil
	}
	var missing []string
	for _, r := range routed {
		if !slices.ContainsFunc(key, func(k string) bool { return k == r || strings.HasPrefix(r, k+".") }) {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	k := strings.Join(key, ",")
	return Usagef("%s %s does not contain %s, by which keyby routes the rows to its shards: equal keys would reach different shards, and each shard would keep its own; use a key that contains %s, or route by this key (keyby %s --shards N -- ...)",
		what, k, strings.Join(missing, ","), strings.Join(missing, ","), k)
}

// checkpointOption is the checkpoint option "shard" of a child of keyby --shards: "<i>/<route>"
// ("<i>" without a route); "" outside shards.
func (s ShardEnv) checkpointOption() string {
	if s.Route == "" {
		return s.Index
	}
	return s.Index + "/" + s.Route
}

// commitDir is the directory where this process, a sink shard of keyby --shards, records its
// commits ("" when it is none).
func (s ShardEnv) commitDir() string {
	if s.Index == "" || s.Commits == "" {
		return ""
	}
	return state.Join(s.Commits, s.Index)
}

// closeSinkShardStdout closes the stdout of a sink running as a shard of keyby --shards (when
// it is a file): keyby learns each streamkit child's event-time column from the first schema
// the child writes (codec.SchemaShardEventTime) before it routes the first row, so every shard
// writes its output schema at once (startWriter's schemaFirst) and a sink, which writes no
// stream, says so by closing its stdout, which keyby reads as "no stream" (as at its exit).
func closeSinkShardStdout(stdout io.Writer) {
	if f, ok := stdout.(*os.File); ok {
		f.Close()
	}
}
