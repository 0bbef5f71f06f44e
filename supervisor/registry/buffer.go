package registry

// outBuf is the bounded buffer of one output stream.
//
// The logical offset space is "bytes written so far". Up to capBytes
// everything is kept in head. Past it, head keeps the first headCap bytes and
// ring keeps the last tailCap bytes; the bytes in between are dropped:
//
//	offset 0          headCap               tailStart()         written
//	|----- head -----|------ dropped -------|------ ring --------|
//
// outBuf is not safe for concurrent use; the Execution's mutex guards it.
type outBuf struct {
	capBytes  int64 // total bytes kept at most; > 0
	headCap   int64 // capBytes / 2
	tailCap   int64 // capBytes - headCap; > 0
	written   int64 // bytes written so far, dropped ones included
	head      []byte
	ring      []byte // len tailCap once truncated, nil before
	ringPos   int    // index in ring of the byte at tailStart()
	truncated bool
}

func newOutBuf(capBytes int64) *outBuf {
	h := capBytes / 2
	return &outBuf{capBytes: capBytes, headCap: h, tailCap: capBytes - h}
}

// kept returns the number of bytes held in memory.
func (b *outBuf) kept() int64 { return int64(len(b.head) + len(b.ring)) }

// dropped returns the number of bytes dropped from the middle.
func (b *outBuf) dropped() int64 { return b.written - b.kept() }

// tailStart returns the logical offset of the oldest byte in ring, or written
// when the buffer is not truncated.
func (b *outBuf) tailStart() int64 {
	if !b.truncated {
		return b.written
	}
	return b.written - b.tailCap
}

// write appends p and reports whether this write made the buffer truncated.
func (b *outBuf) write(p []byte) (becameTruncated bool) {
	n := int64(len(p))
	if n == 0 {
		return false
	}
	if b.truncated {
		b.ringWrite(p)
		b.written += n
		return false
	}
	total := b.written + n
	if total <= b.capBytes {
		b.head = appendCapped(b.head, p, b.capBytes)
		b.written = total
		return false
	}
	// Transition: logical bytes are head ++ p. Keep [0, headCap) and
	// [total-tailCap, total).
	head := make([]byte, b.headCap)
	copyLogical(head, b.head, p, 0)
	ring := make([]byte, b.tailCap)
	copyLogical(ring, b.head, p, total-b.tailCap)
	b.head, b.ring, b.ringPos = head, ring, 0
	b.written = total
	b.truncated = true
	return true
}

func (b *outBuf) ringWrite(p []byte) {
	if int64(len(p)) >= b.tailCap {
		copy(b.ring, p[int64(len(p))-b.tailCap:])
		b.ringPos = 0
		return
	}
	k := copy(b.ring[b.ringPos:], p)
	copy(b.ring, p[k:])
	b.ringPos = (b.ringPos + len(p)) % len(b.ring)
}

// appendCapped appends p to s, never growing the capacity past limit.
func appendCapped(s, p []byte, limit int64) []byte {
	need := len(s) + len(p)
	if need <= cap(s) {
		return append(s, p...)
	}
	c := max(2*cap(s), need, 512)
	if int64(c) > limit {
		c = int(limit)
	}
	ns := make([]byte, len(s), c)
	copy(ns, s)
	return append(ns, p...)
}

// copyLogical fills dst from the concatenation a ++ b starting at logical
// offset from.
func copyLogical(dst, a, b []byte, from int64) {
	if from < int64(len(a)) {
		k := copy(dst, a[from:])
		copy(dst[k:], b)
		return
	}
	copy(dst, b[from-int64(len(a)):])
}

// at returns the byte at logical offset off and whether it is kept.
func (b *outBuf) at(off int64) (byte, bool) {
	if off < 0 || off >= b.written {
		return 0, false
	}
	if off < int64(len(b.head)) {
		return b.head[off], true
	}
	ts := b.tailStart()
	if !b.truncated || off < ts {
		return 0, false
	}
	return b.ring[(int64(b.ringPos)+off-ts)%b.tailCap], true
}

// appendRange appends the kept bytes [from, to) to dst; the range must lie
// entirely in head or entirely in the tail.
func (b *outBuf) appendRange(dst []byte, from, to int64) []byte {
	if from >= to {
		return dst
	}
	if to <= int64(len(b.head)) {
		return append(dst, b.head[from:to]...)
	}
	ts := b.tailStart()
	i := (int64(b.ringPos) + from - ts) % b.tailCap
	n := to - from
	first := min(n, b.tailCap-i)
	dst = append(dst, b.ring[i:i+first]...)
	return append(dst, b.ring[:n-first]...)
}

// span is one contiguous run of kept bytes returned by read.
type span struct {
	off  int64  // logical offset of data[0]
	data []byte // a copy
	gap  bool   // bytes between the requested offset (or the previous span) and off were dropped
}

// read returns the kept bytes of the logical range [from, to), cut so that no
// span starts or ends inside a UTF-8 sequence, as at most two spans (head and
// tail). end is where the returned data stops: to, or the start of an
// incomplete trailing sequence held back because more bytes may complete it.
// A trailing incomplete sequence is returned only when final is true and to
// is the end of the stream. gap reports that dropped bytes lie between from
// and end, even when no span follows them. from must be >= 0.
func (b *outBuf) read(from, to int64, final bool) (spans []span, end int64, gap bool) {
	to = min(to, b.written)
	end = to
	if !final || to < b.written {
		end = b.holdBack(to)
	}
	if from >= end {
		return nil, end, false
	}
	if !b.truncated {
		s := b.boundary(from, end)
		if s < end {
			spans = append(spans, span{off: s, data: b.appendRange(nil, s, end)})
		}
		return spans, end, false
	}
	h, ts := b.headCap, b.tailStart()
	if from < h {
		he := min(end, h)
		s := b.boundary(from, he)
		if end > h {
			// The head is cut mid-rune when its continuation was dropped.
			he = max(b.holdBack(h), s)
		}
		if s < he {
			spans = append(spans, span{off: s, data: b.appendRange(nil, s, he)})
		}
		if end <= h {
			return spans, end, false
		}
		from, gap = ts, true
	} else if from < ts {
		from, gap = ts, true
	}
	if from >= end {
		return spans, end, gap
	}
	s := b.boundary(from, end)
	if s < end {
		spans = append(spans, span{off: s, data: b.appendRange(nil, s, end), gap: gap})
	}
	return spans, end, gap
}

func isCont(c byte) bool { return c&0xC0 == 0x80 }

// seqLen returns the length of the UTF-8 sequence led by c, or 0 if c does not
// lead a multi-byte sequence.
func seqLen(c byte) int64 {
	switch {
	case c&0xE0 == 0xC0:
		return 2
	case c&0xF0 == 0xE0:
		return 3
	case c&0xF8 == 0xF0:
		return 4
	}
	return 0
}

// boundary returns off, or, when off lies inside a multi-byte UTF-8 sequence,
// the offset just past that sequence (never past limit). When the bytes before
// off were dropped, leading continuation bytes are skipped: in valid UTF-8
// they cannot start a rune.
func (b *outBuf) boundary(off, limit int64) int64 {
	c, ok := b.at(off)
	if off == 0 || !ok || !isCont(c) {
		return off
	}
	for k := int64(1); k <= 3; k++ {
		l := off - k
		if l < 0 {
			return off // stray continuation byte at the start
		}
		lc, ok := b.at(l)
		if !ok {
			return b.skipCont(off, limit, 4-k)
		}
		if isCont(lc) {
			continue
		}
		if n := seqLen(lc); n > 0 && l+n > off {
			return b.skipCont(off, min(limit, l+n), 3)
		}
		return off
	}
	return off // three continuation bytes before: off is a stray byte
}

// skipCont advances off over at most n continuation bytes, stopping at limit.
func (b *outBuf) skipCont(off, limit, n int64) int64 {
	for ; n > 0 && off < limit; n-- {
		c, ok := b.at(off)
		if !ok || !isCont(c) {
			break
		}
		off++
	}
	return off
}

// holdBack returns end, or the offset of a multi-byte sequence that starts
// before end and is incomplete at end.
func (b *outBuf) holdBack(end int64) int64 {
	for k := int64(1); k <= 3; k++ {
		l := end - k
		c, ok := b.at(l)
		if !ok {
			return end
		}
		if isCont(c) {
			continue
		}
		if seqLen(c) > k {
			return l
		}
		return end
	}
	return end
}

// shrink cuts what is kept down to at most keep bytes (at least 2), as
// truncation does: the first half of keep from the head, the rest from the
// end of the stream; reads then jump over the dropped middle. It returns
// the bytes freed. Only a terminal execution's buffers are shrunk (nothing
// is written to them any more).
func (b *outBuf) shrink(keep int64) int64 {
	before := b.kept()
	keep = max(keep, 2)
	if before <= keep {
		return 0
	}
	h := min(keep/2, int64(len(b.head)))
	t := keep - h
	// The kept bytes in logical order are head, then (when truncated) the
	// ring from tailStart; the new tail is the last t of them.
	tail := make([]byte, 0, t)
	if b.truncated {
		tail = b.appendRange(tail, b.written-t, b.written)
	} else {
		tail = append(tail, b.head[len(b.head)-int(t):]...)
	}
	head := make([]byte, h)
	copy(head, b.head[:h])
	b.head, b.ring, b.ringPos = head, tail, 0
	b.headCap, b.tailCap, b.capBytes = h, t, h+t
	b.truncated = true
	return before - b.kept()
}

// pageEnd returns the logical offset where a read from from of at most
// maxBytes kept bytes ends: from+maxBytes, or further when dropped bytes
// lie in between (they cost nothing), never past written.
func (b *outBuf) pageEnd(from, maxBytes int64) int64 {
	if from >= b.written {
		return b.written
	}
	if !b.truncated {
		return min(b.written, from+maxBytes)
	}
	h, ts := int64(len(b.head)), b.tailStart()
	switch {
	case from >= ts:
		return min(b.written, from+maxBytes)
	case from >= h:
		return min(b.written, ts+maxBytes)
	case h-from >= maxBytes:
		return from + maxBytes
	}
	return min(b.written, ts+maxBytes-(h-from))
}
