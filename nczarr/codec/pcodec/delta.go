package pcodec

// Delta decoders. Each works on a whole page: out holds the page's latents
// once decoded. Latents are kept in uint64 whatever their width w; sums
// wrap modulo 2^64, which agrees with pco's wrapping w-bit arithmetic once
// the results are reduced to w bits.

// mid is the centre of the w-bit latents, which pco adds to every delta
// (its "toggle center").
func mid(w uint) uint64 { return 1 << (w - 1) }

// mask keeps the low w bits.
func mask(w uint) uint64 { return ^uint64(0) >> (64 - w) }

// decodeConsecutive undoes consecutive delta encoding of order
// len(moments). out holds the page's n-order deltas followed by order
// places that do not reach the output (pco leaves stale latents there),
// and becomes the latents.
func decodeConsecutive(moments, out []uint64, w uint) {
	c := mid(w)
	for i := range out {
		out[i] += c
	}
	// Undo one order at a time, the highest first: each place takes the
	// running moment, which then adds the place's delta.
	for k := len(moments) - 1; k >= 0; k-- {
		m := moments[k]
		for i, d := range out {
			out[i] = m
			m += d
		}
	}
}

// decodeLookback undoes lookback delta encoding: out holds the page's
// delta state's place, then its deltas; latent i is delta i plus latent
// i-lookback, where latents before the page are zero.
func decodeLookback(state, lookbacks, out []uint64, windowLog, w uint) error {
	stateN := len(state)
	if len(out) <= stateN {
		copy(out, state)
		return nil
	}
	copy(out, state)
	window := uint64(1) << windowLog
	c := mid(w)
	for k, lb := range lookbacks {
		i := stateN + k
		if lb == 0 || lb > window {
			return corrupt("lookback %d outside the window of %d", lb, window)
		}
		d := out[i] + c
		if j := i - int(lb); j >= 0 {
			d += out[j]
		}
		out[i] = d
	}
	return nil
}

// decodeConv1 undoes Conv1 delta encoding: out holds the page's state
// place (len(state) latents), then its residuals; each latent is its
// residual plus the prediction from the order latents before it.
func decodeConv1(c *conv1, state, out []uint64, w uint) {
	order := len(state)
	if len(out) <= order {
		copy(out, state)
		return
	}
	copy(out, state)
	mk, centre := mask(w), mid(w)
	for i := order; i < len(out); i++ {
		s := c.bias
		for j, wt := range c.weights {
			s += wt * int64(out[i-order+j]&mk)
		}
		pred := uint64(max(s, 0) >> c.quant)
		out[i] = (out[i] + centre + pred) & mk
	}
}
