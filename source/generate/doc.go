// Package generate is the source behind `streamkit generate`: deterministic synthetic rows
// from a schema and per-column generators (uniform, normal, zipf, choice, sequences,
// timestamps at a rate, words; Flink's datagen and Spark's rate source), or a preset such as
// the Nexmark bids, as Arrow batches whose position (rows emitted) makes every epoch
// replayable: the same seed gives the same rows in every run.
package generate
