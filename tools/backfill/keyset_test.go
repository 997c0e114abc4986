package backfill

import (
	"fmt"
	"testing"
)

func TestKeySet(t *testing.T) {
	s := newKeySet(0)
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
