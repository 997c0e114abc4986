package backfill

import (
	"fmt"
	"testing"
)

func TestKeySet(t *testing.T) {
	s := newKeySet(0, 4)
	for i := 0; i < 100000; i++ {
		if !s.Insert([]byte(fmt.Sprint(i)), i%2 == 0) {
			t.Fatalf("key %d not new", i)
		}
	}
	if s.Insert([]byte("5"), true) || s.Len() != 100000 {
		t.Fatalf("duplicate inserted, len %d", s.Len())
	}
	if !s.Insert(nil, false) || s.Insert([]byte{}, false) {
		t.Fatal("empty key")
	}
	for i := 0; i < 100000; i++ {
		found, ours := s.Lookup([]byte(fmt.Sprint(i)))
		if !found || ours != (i%2 == 0) {
			t.Fatalf("key %d: found %v ours %v", i, found, ours)
		}
	}
	if found, _ := s.Lookup([]byte("x")); found {
		t.Fatal("found x")
	}
	s.Disown([]byte("4"))
	if _, ours := s.Lookup([]byte("4")); ours {
		t.Fatal("still ours")
	}
}

func TestKeySetInsertBlockOrder(t *testing.T) {
	s := newKeySet(10, 2)
	var kb keyBlock
	for _, k := range []string{"a", "b", "a", "c", "b", "a"} {
		kb.buf = append(kb.buf, k...)
		kb.ends = append(kb.ends, len(kb.buf))
		kb.hashes = append(kb.hashes, s.Hash([]byte(k)))
	}
	s.Insert([]byte("c"), false) // from the target
	res := make([]byte, 6)
	s.InsertBlock(&kb, true, res)
	if want := []byte{resNew, resNew, resOurs, resTarget, resOurs, resOurs}; string(res) != string(want) {
		t.Fatalf("results %v, want %v", res, want)
	}
	// A big block takes the parallel path and agrees with a serial set.
	big := keyBlock{}
	for i := 0; i < 20000; i++ {
		k := fmt.Sprint(i % 15000)
		big.buf = append(big.buf, k...)
		big.ends = append(big.ends, len(big.buf))
		big.hashes = append(big.hashes, s.Hash([]byte(k)))
	}
	res = make([]byte, 20000)
	s.InsertBlock(&big, true, res)
	for i, r := range res {
		if want := map[bool]byte{true: resNew, false: resOurs}[i < 15000]; r != want {
			t.Fatalf("key %d: %d, want %d", i, r, want)
		}
	}
}
