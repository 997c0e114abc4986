package codec

import "testing"

func TestFloorDivMod(t *testing.T) {
	for _, c := range []struct{ a, b, q, m int64 }{
		{7, 2, 3, 1}, {-7, 2, -4, 1}, {7, -2, -4, -1}, {-7, -2, 3, -1},
		{-1, 1000, -1, 999}, {0, 5, 0, 0}, {-1000, 1000, -1, 0}, {1000, 1000, 1, 0},
	} {
		if q, m := FloorDiv(c.a, c.b), FloorMod(c.a, c.b); q != c.q || m != c.m {
			t.Errorf("FloorDiv/FloorMod(%d, %d) = %d, %d; want %d, %d", c.a, c.b, q, m, c.q, c.m)
		}
		if got := FloorDiv(c.a, c.b)*c.b + FloorMod(c.a, c.b); got != c.a {
			t.Errorf("%d*%d + %d = %d, want %d", FloorDiv(c.a, c.b), c.b, FloorMod(c.a, c.b), got, c.a)
		}
	}
}
