package generate

import (
	"hash/fnv"
	"math"
	"math/bits"
)

// The generator is counter-based: every random number is a pure function of (salt, key), where
// the salt is derived from --seed and the column path and the key from the row index. There is
// no sequential RNG state, so any row can be produced on its own (random access): a replay
// from a WAL position, a batch size change or a duplicate lookup all see the same values.
//
// mix is the output function of splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom
// number generators", OOPSLA 2014; constants from Vigna's splitmix64.c). rnd(salt, key) is the
// key-th output of the splitmix64 sequence seeded with salt.

const golden = 0x9e3779b97f4a7c15

func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// rnd is the 64-bit random number of key under salt.
func rnd(salt, key uint64) uint64 { return mix(salt + (key+1)*golden) }

// sub derives the salt of the j-th independent stream of a column (e.g. a second uniform).
func sub(salt uint64, j uint64) uint64 { return mix(salt ^ mix(j+0x5851f42d4c957f2d)) }

// below maps r uniformly onto [0, n) by a 64×64→128 multiply (Lemire), n > 0.
func below(r, n uint64) uint64 {
	hi, _ := bits.Mul64(r, n)
	return hi
}

// unit maps r onto [0, 1) with 53 random bits.
func unit(r uint64) float64 { return float64(r>>11) * (1.0 / (1 << 53)) }

// open01 maps r onto the open interval (0, 1).
func open01(r uint64) float64 { return (float64(r>>11) + 0.5) * (1.0 / (1 << 53)) }

// threshold turns a probability into a comparison bound for a 64-bit random number: r < t
// happens with probability p (t = 0 never, p ≥ 1 always via the always flag of the caller).
func threshold(p float64) uint64 {
	switch {
	case p <= 0:
		return 0
	case p >= 1:
		return math.MaxUint64
	}
	return uint64(p * (1 << 64))
}

// pathSalt is the salt of a column: seed and path, so that columns are independent and a
// column's values do not change when other columns are added or removed.
func pathSalt(seed uint64, path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return mix(seed*golden ^ mix(h.Sum64()))
}

// elemKey is the key of the k-th element of a list in the row (or parent element) with key.
func elemKey(key uint64, k int) uint64 { return mix(key ^ mix(uint64(k)+0x632be59bd9b4e019)) }
