package pcodec

import "encoding/binary"

// pageState is the decoding state of one latent variable in a page.
type pageState struct {
	v      *latentVar
	ans    [4]uint32 // the four interleaved tANS states
	state  []uint64  // delta state read from the page header
	out    []uint64  // the page's latents
	n      int       // latents written to out
	offset int       // where in out the decoded latents start
	offs   [batchN]uint8
}

// scratch holds the latent buffers, reused from chunk to chunk.
type scratch struct {
	vars [3]pageState
	bufs [3][]uint64
}

// decodePage decodes a page of n numbers of chunk m from r into dst, which
// has room for n numbers of type t.
func (s *scratch) decodePage(r *bitReader, m *chunkMeta, t numType, n int, dst []byte) error {
	for i, v := range m.vars {
		p := &s.vars[i]
		*p = pageState{v: v}
		if v == nil {
			continue
		}
		if v.stateN*int(v.bits) > r.remaining() {
			return corrupt("delta state longer than the data")
		}
		p.state = make([]uint64, v.stateN)
		for j := range p.state {
			p.state[j] = r.readWide(v.bits)
		}
		for j := range p.ans {
			p.ans[j] = uint32(r.read(v.ansLog))
		}
		if cap(s.bufs[i]) < n {
			s.bufs[i] = make([]uint64, n)
		}
		// No need to clear: every place that reaches the output is
		// written, as in pco, whose scratch keeps stale latents.
		p.out = s.bufs[i][:n]
		if v.lookback || v.conv {
			// The decoded latents follow the delta state.
			p.offset = min(v.stateN, n)
		}
	}
	if err := r.align("page metadata"); err != nil {
		return err
	}
	primaryStateN := m.vars[varPrimary].stateN
	for i, v := range m.vars {
		if v != nil && len(v.bins) == 0 && n > primaryStateN {
			return corrupt("latent variable %d has no bins but %d latents", i, n-primaryStateN)
		}
	}

	for start := 0; start < n; start += batchN {
		left := n - start
		size := min(left, batchN)
		if p := &s.vars[varDelta]; p.v != nil {
			p.readBatch(r, min(max(left-primaryStateN, 0), size))
		}
		for i := varPrimary; i <= varSecondary; i++ {
			if p := &s.vars[i]; p.v != nil {
				p.readBatch(r, min(max(left-p.v.stateN, 0), batchN))
			}
		}
		if r.overrun() {
			return corrupt("page data ends early")
		}
	}
	if err := r.align("page"); err != nil {
		return err
	}

	for i := varPrimary; i <= varSecondary; i++ {
		p := &s.vars[i]
		if p.v == nil {
			continue
		}
		switch {
		case p.v.consec:
			decodeConsecutive(p.state, p.out, p.v.bits)
		case p.v.lookback:
			if err := decodeLookback(p.state, s.vars[varDelta].out[:s.vars[varDelta].n], p.out, m.window, p.v.bits); err != nil {
				return err
			}
		case p.v.conv:
			decodeConv1(&m.conv, p.state, p.out, p.v.bits)
		}
	}
	var sec []uint64
	if s.vars[varSecondary].v != nil {
		sec = s.vars[varSecondary].out
	}
	return join(m, t, s.vars[varPrimary].out, sec, dst)
}

// readBatch reads k latents of a batch: their tANS-coded bins, then their
// offsets.
func (p *pageState) readBatch(r *bitReader, k int) {
	if k == 0 {
		return
	}
	v := p.v
	dst := p.out[p.offset+p.n:][:k]
	p.n += k
	if len(v.bins) <= 1 {
		var b bin
		if len(v.bins) == 1 {
			b = v.bins[0]
		}
		for i := range dst {
			dst[i] = b.lower
		}
		if b.offBits > 0 {
			pos, ob := r.pos, b.offBits
			for i := range dst {
				dst[i] += r.bits(pos, ob)
				pos += int(ob)
			}
			r.pos = pos
		}
		return
	}
	offs := p.offs[:k]
	nodes := v.nodes
	s0, s1, s2, s3 := p.ans[0], p.ans[1], p.ans[2], p.ans[3]
	// Locals, not r's fields, so that the loops keep them in registers.
	src, pos := r.src, r.pos
	i := 0
	// Four symbols take at most 4*14 = 56 bits: one load serves them.
	for ; i+4 <= k; i += 4 {
		var w uint64
		if b := pos >> 3; b+8 <= len(src) {
			w = binary.LittleEndian.Uint64(src[b:])
		} else {
			w = r.word(b)
		}
		sh := uint(pos) & 7
		d, o := dst[i:i+4:i+4], offs[i:i+4:i+4]
		nd := nodes[s0]
		d[0], o[0] = nd.lower, nd.offBits
		s0 = nd.next + uint32(w>>sh)&(1<<nd.bits-1)
		sh += uint(nd.bits)
		nd = nodes[s1]
		d[1], o[1] = nd.lower, nd.offBits
		s1 = nd.next + uint32(w>>sh)&(1<<nd.bits-1)
		sh += uint(nd.bits)
		nd = nodes[s2]
		d[2], o[2] = nd.lower, nd.offBits
		s2 = nd.next + uint32(w>>sh)&(1<<nd.bits-1)
		sh += uint(nd.bits)
		nd = nodes[s3]
		d[3], o[3] = nd.lower, nd.offBits
		s3 = nd.next + uint32(w>>sh)&(1<<nd.bits-1)
		sh += uint(nd.bits)
		pos = pos&^7 + int(sh)
	}
	r.pos = pos
	p.ans = [4]uint32{s0, s1, s2, s3}
	for ; i < k; i++ {
		j := i & 3
		nd := nodes[p.ans[j]]
		dst[i], offs[i] = nd.lower, nd.offBits
		p.ans[j] = nd.next + uint32(r.read(uint(nd.bits)))
	}
	if v.maxOffBits == 0 {
		return
	}
	pos = r.pos
	if v.maxOffBits <= 57 {
		// One load holds any offset of up to 57 bits.
		for i, ob := range offs {
			var w uint64
			if b := pos >> 3; b+8 <= len(src) {
				w = binary.LittleEndian.Uint64(src[b:])
			} else {
				w = r.word(b)
			}
			dst[i] += w >> (uint(pos) & 7) & (1<<ob - 1)
			pos += int(ob)
		}
		r.pos = pos
		return
	}
	for i, ob := range offs {
		var w uint64
		if b := pos >> 3; b+9 <= len(src) {
			// The offset's bits, up to 64, past up to 7 bits of the byte.
			w = binary.LittleEndian.Uint64(src[b:])>>(uint(pos)&7) |
				uint64(src[b+8])<<(64-uint(pos)&7)
		} else {
			w = r.bits(pos, uint(ob))
		}
		dst[i] += w & (^uint64(0) >> (64 - ob))
		pos += int(ob)
	}
	r.pos = pos
}
