package throttlekit

import "testing"

// TryAcquire + Release (core measuring the round trip) through cgo, uncontended: bench/run.sh's
// "adaptive" part prints it as a ROW beside core's (the target is 1 µs through a binding).
func BenchmarkAdaptiveTryAcquireRelease(b *testing.B) {
	l, err := NewAdaptiveLimiter(`{"algorithm":"gradient2","initialLimit":64}`)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, _, err := l.TryAcquire("")
		if err != nil || p == nil {
			b.Fatal("not granted", err)
		}
		p.Release(Success)
	}
}
