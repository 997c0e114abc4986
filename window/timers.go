package window

// timerRef names a slot; gen detects that the slot was freed or changed since the timer was
// set (stale timers are skipped, never removed eagerly).
type timerRef struct {
	slot int32
	gen  uint32
}

// timerQueue holds timers bucketed by time: a min-heap of distinct times and one bucket per
// time. Tumbling and sliding windows of all keys share few end times, so a push is usually an
// append to an existing bucket.
type timerQueue struct {
	times   []int64 // min-heap
	index   map[int64]int32
	buckets [][]timerRef
	free    []int32
	lastT   int64
	lastB   int32
}

func (q *timerQueue) init() {
	q.times = q.times[:0]
	q.index = map[int64]int32{}
	q.buckets = q.buckets[:0]
	q.free = q.free[:0]
	q.lastB = -1
}

// push adds a timer for slot s (generation gen) at time t.
func (q *timerQueue) push(t int64, s int32, gen uint32) {
	if q.lastB >= 0 && q.lastT == t {
		q.buckets[q.lastB] = append(q.buckets[q.lastB], timerRef{s, gen})
		return
	}
	b, ok := q.index[t]
	if !ok {
		if n := len(q.free); n > 0 {
			b = q.free[n-1]
			q.free = q.free[:n-1]
		} else {
			b = int32(len(q.buckets))
			q.buckets = append(q.buckets, nil)
		}
		q.index[t] = b
		q.heapPush(t)
	}
	q.buckets[b] = append(q.buckets[b], timerRef{s, gen})
	q.lastT, q.lastB = t, b
}

// min returns the earliest timer time, MaxTime when empty.
func (q *timerQueue) min() int64 {
	if len(q.times) == 0 {
		return MaxTime
	}
	return q.times[0]
}

// popUntil calls fn for each bucket with time ≤ t, earliest first, removing it. fn may push
// new timers (they are handled in this call if due).
func (q *timerQueue) popUntil(t int64, fn func(t int64, refs []timerRef)) {
	for len(q.times) > 0 && q.times[0] <= t {
		tt := q.heapPop()
		b := q.index[tt]
		delete(q.index, tt)
		if q.lastB == b {
			q.lastB = -1
		}
		fn(tt, q.buckets[b])
		q.buckets[b] = q.buckets[b][:0]
		q.free = append(q.free, b)
	}
}

func (q *timerQueue) heapPush(t int64) {
	h := append(q.times, t)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	q.times = h
}

func (q *timerQueue) heapPop() int64 {
	h := q.times
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h[r] < h[l] {
			c = r
		}
		if h[i] <= h[c] {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	q.times = h
	return top
}
