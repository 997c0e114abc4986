package window

import (
	"math/rand/v2"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

// us parses an RFC 3339 instant into µs.
func us(t testing.TB, s string) int64 {
	t.Helper()
	tt, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return Micros(tt)
}

func TestAssignUTC(t *testing.T) {
	tumble, _ := NewTumbling(time.Minute, 0, nil)
	tumbleOff, _ := NewTumbling(time.Hour, 15*time.Minute, time.UTC)
	slide, _ := NewSliding(10*time.Minute, 5*time.Minute, 0, nil)
	slideOdd, _ := NewSliding(10*time.Minute, 3*time.Minute, 0, nil)
	sess, _ := NewSession(10 * time.Second)
	tests := []struct {
		name string
		a    *Assigner
		ts   string
		want []string // pairs start,end
	}{
		{"tumbling", tumble, "2024-01-01T10:00:10Z", []string{"2024-01-01T10:00:00Z", "2024-01-01T10:01:00Z"}},
		{"tumbling boundary", tumble, "2024-01-01T10:01:00Z", []string{"2024-01-01T10:01:00Z", "2024-01-01T10:02:00Z"}},
		{"tumbling before epoch", tumble, "1969-12-31T23:59:59.5Z", []string{"1969-12-31T23:59:00Z", "1970-01-01T00:00:00Z"}},
		{"tumbling offset", tumbleOff, "2024-01-01T10:05:00Z", []string{"2024-01-01T09:15:00Z", "2024-01-01T10:15:00Z"}},
		{"sliding", slide, "2024-01-01T10:07:00Z", []string{
			"2024-01-01T10:00:00Z", "2024-01-01T10:10:00Z",
			"2024-01-01T10:05:00Z", "2024-01-01T10:15:00Z"}},
		{"sliding uneven", slideOdd, "1970-01-01T00:10:00Z", []string{
			"1970-01-01T00:03:00Z", "1970-01-01T00:13:00Z",
			"1970-01-01T00:06:00Z", "1970-01-01T00:16:00Z",
			"1970-01-01T00:09:00Z", "1970-01-01T00:19:00Z"}},
		{"session", sess, "2024-01-01T10:00:00Z", []string{"2024-01-01T10:00:00Z", "2024-01-01T10:00:10Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.a.Assign(us(t, tt.ts), nil)
			var want []Window
			for i := 0; i < len(tt.want); i += 2 {
				want = append(want, Window{us(t, tt.want[i]), us(t, tt.want[i+1])})
			}
			if !equalWindows(got, want) {
				t.Errorf("Assign(%s) = %v, want %v", tt.ts, got, want)
			}
		})
	}
}

func equalWindows(a, b []Window) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAssignCalendar(t *testing.T) {
	la := mustLoc(t, "America/Los_Angeles")
	kol := mustLoc(t, "Asia/Kolkata")
	day, _ := NewTumbling(24*time.Hour, 0, la)
	day6, _ := NewTumbling(24*time.Hour, 6*time.Hour, la)
	hourLA, _ := NewTumbling(time.Hour, 0, la)
	hourKol, _ := NewTumbling(time.Hour, 0, kol)
	dayKol, _ := NewTumbling(24*time.Hour, 0, kol)
	slideDay, _ := NewSliding(48*time.Hour, 24*time.Hour, 0, la)
	tests := []struct {
		name       string
		a          *Assigner
		ts         string
		want       []string
		wantLength []time.Duration
	}{
		{"LA day before DST", day, "2021-03-13T12:00:00-08:00",
			[]string{"2021-03-13T00:00:00-08:00", "2021-03-14T00:00:00-08:00"}, []time.Duration{24 * time.Hour}},
		{"LA spring forward day is 23h", day, "2021-03-14T12:00:00-07:00",
			[]string{"2021-03-14T00:00:00-08:00", "2021-03-15T00:00:00-07:00"}, []time.Duration{23 * time.Hour}},
		{"LA spring forward day, early morning", day, "2021-03-14T01:30:00-08:00",
			[]string{"2021-03-14T00:00:00-08:00", "2021-03-15T00:00:00-07:00"}, []time.Duration{23 * time.Hour}},
		{"LA day after DST", day, "2021-03-15T00:00:00-07:00",
			[]string{"2021-03-15T00:00:00-07:00", "2021-03-16T00:00:00-07:00"}, []time.Duration{24 * time.Hour}},
		{"LA fall back day is 25h", day, "2021-11-07T01:30:00-08:00",
			[]string{"2021-11-07T00:00:00-07:00", "2021-11-08T00:00:00-08:00"}, []time.Duration{25 * time.Hour}},
		{"LA day offset 6h across DST", day6, "2021-03-14T05:00:00-07:00",
			[]string{"2021-03-13T06:00:00-08:00", "2021-03-14T06:00:00-07:00"}, []time.Duration{23 * time.Hour}},
		{"LA hour after spring forward", hourLA, "2021-03-14T03:10:00-07:00",
			[]string{"2021-03-14T03:00:00-07:00", "2021-03-14T04:00:00-07:00"}, []time.Duration{time.Hour}},
		{"LA hour before spring forward", hourLA, "2021-03-14T01:59:59-08:00",
			[]string{"2021-03-14T01:00:00-08:00", "2021-03-14T03:00:00-07:00"}, []time.Duration{time.Hour}},
		{"LA repeated hour, first pass", hourLA, "2021-11-07T01:10:00-07:00",
			[]string{"2021-11-07T01:00:00-07:00", "2021-11-07T02:00:00-08:00"}, []time.Duration{2 * time.Hour}},
		{"LA repeated hour, second pass", hourLA, "2021-11-07T01:10:00-08:00",
			[]string{"2021-11-07T01:00:00-07:00", "2021-11-07T02:00:00-08:00"}, []time.Duration{2 * time.Hour}},
		{"Kolkata hour starts at :30 UTC", hourKol, "2024-05-01T10:45:00Z",
			[]string{"2024-05-01T10:30:00Z", "2024-05-01T11:30:00Z"}, []time.Duration{time.Hour}},
		{"Kolkata hour, just before :30", hourKol, "2024-05-01T10:29:59.999999Z",
			[]string{"2024-05-01T09:30:00Z", "2024-05-01T10:30:00Z"}, []time.Duration{time.Hour}},
		{"Kolkata day starts 18:30 UTC", dayKol, "2024-05-01T20:00:00Z",
			[]string{"2024-05-01T18:30:00Z", "2024-05-02T18:30:00Z"}, []time.Duration{24 * time.Hour}},
		{"LA sliding 2 days over DST", slideDay, "2021-03-14T12:00:00-07:00",
			[]string{"2021-03-13T00:00:00-08:00", "2021-03-15T00:00:00-07:00",
				"2021-03-14T00:00:00-08:00", "2021-03-16T00:00:00-07:00"}, []time.Duration{47 * time.Hour, 47 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for pass := 0; pass < 2; pass++ { // second pass exercises the cache
				got := tt.a.Assign(us(t, tt.ts), nil)
				var want []Window
				for i := 0; i < len(tt.want); i += 2 {
					want = append(want, Window{us(t, tt.want[i]), us(t, tt.want[i+1])})
				}
				if !equalWindows(got, want) {
					t.Fatalf("pass %d: Assign(%s) = %v, want %v", pass, tt.ts, got, want)
				}
				for i, w := range got {
					if d := time.Duration(w.End-w.Start) * time.Microsecond; d != tt.wantLength[i] {
						t.Errorf("window %v lasts %v, want %v", w, d, tt.wantLength[i])
					}
				}
			}
		})
	}
}

// TestAssignCalendarPartition checks, over random instants around DST changes, that calendar
// windows contain their record, and that the cached and the uncached paths agree with a fresh
// assigner; tumbling windows must partition the time line.
func TestAssignCalendarPartition(t *testing.T) {
	la := mustLoc(t, "America/Los_Angeles")
	lh := mustLoc(t, "Australia/Lord_Howe") // 30-minute DST shift
	kol := mustLoc(t, "Asia/Kolkata")
	r := rand.New(rand.NewPCG(1, 2))
	type mk func() *Assigner
	cases := []struct {
		name string
		mk   mk
	}{
		{"LA 1h", func() *Assigner { a, _ := NewTumbling(time.Hour, 0, la); return a }},
		{"LA 20m", func() *Assigner { a, _ := NewTumbling(20*time.Minute, 0, la); return a }},
		{"LA 7m off 3m", func() *Assigner { a, _ := NewTumbling(7*time.Minute, 3*time.Minute, la); return a }},
		{"LA 1d", func() *Assigner { a, _ := NewTumbling(24*time.Hour, 0, la); return a }},
		{"LA slide 2h/30m", func() *Assigner { a, _ := NewSliding(2*time.Hour, 30*time.Minute, 0, la); return a }},
		{"LordHowe 1h", func() *Assigner { a, _ := NewTumbling(time.Hour, 0, lh); return a }},
		{"LordHowe 45m", func() *Assigner { a, _ := NewSliding(90*time.Minute, 45*time.Minute, 0, lh); return a }},
		{"Kolkata 1h", func() *Assigner { a, _ := NewTumbling(time.Hour, 0, kol); return a }},
	}
	centers := []string{"2021-03-14T10:00:00Z", "2021-11-07T09:00:00Z", "2021-04-04T15:00:00Z", "2021-10-02T16:00:00Z"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cached := c.mk()
			for _, center := range centers {
				base := us(t, center)
				for i := 0; i < 3000; i++ {
					ts := base + r.Int64N(4*usPerDay) - 2*usPerDay
					got := cached.Assign(ts, nil)
					fresh := c.mk().Assign(ts, nil)
					if !equalWindows(got, fresh) {
						t.Fatalf("ts %s: cached %v != fresh %v", TimeOf(ts), got, fresh)
					}
					if len(got) == 0 {
						t.Fatalf("ts %s: no window", TimeOf(ts))
					}
					for _, w := range got {
						if !(w.Start <= ts && ts < w.End) {
							t.Fatalf("ts %s not in %v", TimeOf(ts), w)
						}
					}
					if c.mk().Kind() == Tumbling {
						w := got[0]
						if prev := c.mk().Assign(w.Start-1, nil)[0]; prev.End != w.Start {
							t.Fatalf("window before %v is %v: not contiguous", w, prev)
						}
						if next := c.mk().Assign(w.End, nil)[0]; next.Start != w.End {
							t.Fatalf("window after %v is %v: not contiguous", w, next)
						}
					}
				}
			}
		})
	}
}

func TestAssignerErrors(t *testing.T) {
	_, err1 := NewTumbling(0, 0, nil)
	_, err2 := NewSliding(time.Minute, 2*time.Minute, 0, nil)
	_, err3 := NewSession(0)
	_, err4 := NewCount(5, 6)
	for i, err := range []error{err1, err2, err3, err4} {
		if err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

func TestZoneCivilToInstant(t *testing.T) {
	la := mustLoc(t, "America/Los_Angeles")
	civil := func(s string) int64 { return us(t, s+"Z") } // wall-clock reading as if UTC
	tests := []struct{ local, want string }{
		{"2021-03-14T01:30:00", "2021-03-14T01:30:00-08:00"},
		{"2021-03-14T02:30:00", "2021-03-14T03:30:00-07:00"}, // gap: shifted forward
		{"2021-03-14T03:30:00", "2021-03-14T03:30:00-07:00"},
		{"2021-11-07T01:30:00", "2021-11-07T01:30:00-07:00"}, // overlap: earlier offset
		{"2021-11-07T02:30:00", "2021-11-07T02:30:00-08:00"},
		{"2021-07-01T12:00:00", "2021-07-01T12:00:00-07:00"},
	}
	z := newZone(la)
	for _, tt := range tests {
		if got, want := z.civilToInstant(civil(tt.local)), us(t, tt.want); got != want {
			t.Errorf("civilToInstant(%s) = %s, want %s", tt.local, TimeOf(got), TimeOf(want))
		}
	}
}
