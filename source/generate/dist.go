package generate

import "math"

// invNorm is the inverse of the standard normal CDF for p in (0, 1), by Peter Acklam's
// rational approximation (relative error < 1.15e-9): one uniform per value, no rejection, so a
// normal value stays a pure function of its key.
func invNorm(p float64) float64 {
	const (
		a1, a2, a3, a4, a5, a6 = -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00
		b1, b2, b3, b4, b5     = -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01
		c1, c2, c3, c4, c5, c6 = -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00
		d1, d2, d3, d4         = 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00
		pLow                   = 0.02425
	)
	switch {
	case p < pLow:
		q := math.Sqrt(-2 * math.Log(p))
		return (((((c1*q+c2)*q+c3)*q+c4)*q+c5)*q + c6) / ((((d1*q+d2)*q+d3)*q+d4)*q + 1)
	case p <= 1-pLow:
		q := p - 0.5
		r := q * q
		return (((((a1*r+a2)*r+a3)*r+a4)*r+a5)*r + a6) * q / (((((b1*r+b2)*r+b3)*r+b4)*r+b5)*r + 1)
	default:
		q := math.Sqrt(-2 * math.Log1p(-p))
		return -(((((c1*q+c2)*q+c3)*q+c4)*q+c5)*q + c6) / ((((d1*q+d2)*q+d3)*q+d4)*q + 1)
	}
}

// zipfGen draws k in [0, imax] with P(k) ∝ (v + k)^(−s), the distribution of Go's
// math/rand.NewZipf. Up to 65,536 values it samples an alias table (O(1)); above, it uses the
// rejection-inversion method of Hörmann and Derflinger ("Rejection-inversion to generate
// variates from monotone discrete distributions", 1996), as math/rand does, drawing the i-th
// attempt's uniform from an independent stream so each value is a pure function of its key.
type zipfGen struct {
	salt uint64
	tab  *alias
	// rejection-inversion constants (see math/rand's zipf.go)
	imax, v, q, oneminusQ, oneminusQinv, hxm, hx0minusHxm, s float64
	salts                                                    [8]uint64
}

func newZipf(salt uint64, s, v float64, imax uint64) *zipfGen {
	z := &zipfGen{salt: salt}
	if imax < 1<<16 {
		w := make([]float64, imax+1)
		for k := range w {
			w[k] = math.Pow(v+float64(k), -s)
		}
		z.tab = newAlias(w)
		return z
	}
	z.imax, z.v, z.q = float64(imax), v, s
	z.oneminusQ = 1 - s
	z.oneminusQinv = 1 / z.oneminusQ
	z.hxm = z.h(z.imax + 0.5)
	z.hx0minusHxm = z.h(0.5) - math.Exp(math.Log(v)*(-s)) - z.hxm
	z.s = 1 - z.hinv(z.h(1.5)-math.Exp(-s*math.Log(v+1)))
	for i := range z.salts {
		z.salts[i] = sub(salt, uint64(i))
	}
	return z
}

func (z *zipfGen) h(x float64) float64 {
	return math.Exp(z.oneminusQ*math.Log(z.v+x)) * z.oneminusQinv
}

func (z *zipfGen) hinv(x float64) float64 {
	return math.Exp(z.oneminusQinv*math.Log(z.oneminusQ*x)) - z.v
}

func (z *zipfGen) one(key uint64) int64 {
	for i := uint64(0); ; i++ {
		var salt uint64
		if i < uint64(len(z.salts)) {
			salt = z.salts[i]
		} else {
			salt = sub(z.salt, i)
		}
		ur := z.hxm + unit(rnd(salt, key))*z.hx0minusHxm
		x := z.hinv(ur)
		k := math.Floor(x + 0.5)
		if k-x <= z.s || ur >= z.h(k+0.5)-math.Exp(-math.Log(k+z.v)*z.q) {
			return int64(k)
		}
	}
}

func (z *zipfGen) ints(dst []int64, _, key []uint64) {
	if z.tab != nil {
		for k, x := range key {
			dst[k] = int64(z.tab.pick(rnd(z.salt, x)))
		}
		return
	}
	for k, x := range key {
		dst[k] = z.one(x)
	}
}
