package stage

import (
	"errors"
	"strings"
	"testing"
)

// LoadShardEnv reads what keyby --shards sets for its children and refuses (as usage errors
// naming the variable) what it would never set.
func TestLoadShardEnv(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    ShardEnv
		wantErr string
	}{
		{nil, ShardEnv{}, ""},
		{map[string]string{EnvCheckpoint: "/ck"}, ShardEnv{CheckpointRoot: "/ck"}, ""},
		{map[string]string{EnvShard: "1", EnvShardRoute: "2 by xxh3-64(value.id,k)", EnvShardCommits: "/ck/keyby/shards", EnvShardProgress: "1"},
			ShardEnv{Index: "1", Route: "2 by xxh3-64(value.id,k)", Commits: "/ck/keyby/shards", Progress: true}, ""},
		{map[string]string{EnvShard: "0", EnvShardPath: "1.0"}, ShardEnv{Index: "0", Path: "1.0"}, ""},
		{map[string]string{EnvShard: "x"}, ShardEnv{}, "$STREAMKIT_SHARD=\"x\" is not a shard index"},
		{map[string]string{EnvShard: "01"}, ShardEnv{}, "STREAMKIT_SHARD"},
		{map[string]string{EnvShard: "0", EnvShardPath: "1.1"}, ShardEnv{}, "STREAMKIT_SHARD_PATH"},
		{map[string]string{EnvShard: "0", EnvShardPath: "0"}, ShardEnv{}, "STREAMKIT_SHARD_PATH"},
		{map[string]string{EnvShard: "2", EnvShardRoute: "2 by xxh3-64(id)"}, ShardEnv{}, "STREAMKIT_SHARD_ROUTE"},
		{map[string]string{EnvShard: "0", EnvShardRoute: "by id"}, ShardEnv{}, "STREAMKIT_SHARD_ROUTE"},
		{map[string]string{EnvShard: "0", EnvShardProgress: "yes"}, ShardEnv{Index: "0", Progress: true}, ""},
		// Without STREAMKIT_SHARD a stage is no shard: leftover shard variables are ignored.
		{map[string]string{EnvShardPath: "1.0", EnvShardRoute: "bogus", EnvShardCommits: "/x", EnvShardProgress: "yes", EnvCheckpoint: "/ck"},
			ShardEnv{CheckpointRoot: "/ck"}, ""},
	} {
		got, err := LoadShardEnv(func(k string) string { return c.env[k] })
		var usage *UsageError
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.wantErr != "" && (err == nil || !errors.As(err, &usage) || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%v: got error %v, want a usage error containing %q", c.env, err, c.wantErr)
		case got != c.want:
			t.Errorf("%v: got %+v, want %+v", c.env, got, c.want)
		}
	}
}

// A shard's name, checkpoint option, commit directory and key check come from the value alone.
func TestShardEnvUses(t *testing.T) {
	s := ShardEnv{Index: "1", Path: "2.1", Route: ShardRoute(2, "xxh3-64", []string{"value.id"}), Commits: "/c", CheckpointRoot: "/ck"}
	if got := s.Name(); got != "2.1" {
		t.Errorf("Name %q", got)
	}
	if got := s.checkpointOption(); got != "1/2 by xxh3-64(value.id)" {
		t.Errorf("checkpointOption %q", got)
	}
	if got := s.commitDir(); got != "/c/1" {
		t.Errorf("commitDir %q", got)
	}
	if err := s.CheckKey("dedup: --key", []string{"value"}); err != nil {
		t.Errorf("a struct above the routing key: %v", err)
	}
	if err := s.CheckKey("dedup: --key", []string{"k"}); err == nil || !strings.Contains(err.Error(), "dedup: --key k does not contain value.id") {
		t.Errorf("got %v", err)
	}
	o := Options{Tool: "dedup", Shard: &s}
	if got := o.CheckpointDir(); got != "/ck/dedup.shard-2.1" {
		t.Errorf("CheckpointDir %q", got)
	}
	if err := (ShardEnv{}).CheckKey("dedup: --key", []string{"k"}); err != nil {
		t.Errorf("outside shards: %v", err)
	}
}
