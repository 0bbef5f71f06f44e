package registry

import (
	"cmp"
	"slices"
	"unicode/utf8"
)

// part is one of the parts of a terminal execution's retained bytes that
// the retention share may cut (shareLocked).
type part int

const (
	partStdout part = iota // the stdout buffer (Stdout)
	partStderr             // the stderr buffer (Stderr)
	partLines              // the console lines, lineOverhead each counted with their text
	partError              // Result.Error: a thrown error's message is up to 48 KiB
	numParts
)

// MinErrorKeep is how many bytes of an execution's error text
// (Result.Error) the retention share always leaves it: an error text is
// cut, when it is, to at least this, marker included. What it keeps is
// counted as a fixed cost of its account, like an attachment.
const MinErrorKeep = 256

// errorCutMarker ends an error text cut to the retention share.
const errorCutMarker = " [... cut to the retention budget]"

// floor is what the share leaves of a part of size n whatever it is:
// the error text keeps MinErrorKeep bytes, streams and lines may go to
// nothing (a stream keeps 2 bytes: outBuf.shrink).
func floor(p part, n int64) int64 {
	if p == partError {
		return min(n, MinErrorKeep)
	}
	return 0
}

// waterLevel returns the largest L such that the sizes, each cut to at
// most L, add up to at most budget; -1 when they fit whole.
func waterLevel(sizes []int64, budget int64) int64 {
	s := slices.Clone(sizes)
	slices.Sort(s)
	left := max(budget, 0)
	for i, n := range s {
		k := int64(len(s) - i)
		if n > left/k {
			return left / k
		}
		left -= n
	}
	return -1
}

// capTo returns n, or level when level >= 0 and n is larger.
func capTo(n, level int64) int64 {
	if level >= 0 && n > level {
		return level
	}
	return n
}

// shareLocked brings what terminal executions keep within the budget
// without removing any, by equal shares at three levels: the budget is
// shared among accounts (Meta.Account, a principal), an account's share
// among its owners (Meta.Owner: the principal itself and each of its
// clients, such as the MCP bridge's tokens), and an owner's share among
// the parts (stdout, stderr, console lines, error text) of its
// executions. At each level a member within an equal share of what the
// others leave is untouched (water filling), so that whoever floods the
// registry cuts its own results first: an account within
// budget / (accounts holding results) is never cut, nor an owner within
// its share of its account's. Parts larger than their share are cut
// down to it (streams head and tail kept, as truncation does; lines from
// the end; an error text to at least MinErrorKeep bytes with a marker).
// Attachments left by dropAttachmentsLocked and the error texts' floors
// are fixed costs of their owner. It returns the bytes freed.
//
// locked is an execution whose mutex the caller holds (nil: none).
func (r *Registry) shareLocked(locked *Execution) int64 {
	if r.terminalBytes <= r.budget {
		return 0
	}
	type owner struct {
		entries []*entry
		size    int64
	}
	type account struct {
		owners map[string]*owner
		size   int64
	}
	accounts := map[string]*account{}
	for _, en := range r.entries {
		if !en.terminal {
			continue
		}
		m := en.e.meta
		a := accounts[m.Account]
		if a == nil {
			a = &account{owners: map[string]*owner{}}
			accounts[m.Account] = a
		}
		o := a.owners[m.Owner]
		if o == nil {
			o = &owner{}
			a.owners[m.Owner] = o
		}
		o.entries = append(o.entries, en)
		o.size += en.total()
		a.size += en.total()
	}
	sizes := make([]int64, 0, len(accounts))
	for _, a := range accounts {
		sizes = append(sizes, a.size)
	}
	aLevel := waterLevel(sizes, r.budget)
	var freed int64
	for _, a := range accounts {
		aCap := capTo(a.size, aLevel)
		if aCap == a.size {
			continue
		}
		sizes = sizes[:0]
		for _, o := range a.owners {
			sizes = append(sizes, o.size)
		}
		oLevel := waterLevel(sizes, aCap)
		for _, o := range a.owners {
			if oCap := capTo(o.size, oLevel); oCap < o.size {
				freed += r.cutOwnerLocked(o.entries, oCap, locked)
			}
		}
	}
	return freed
}

// cutOwnerLocked cuts the parts of one owner's terminal entries so that
// they keep about keep bytes in all (floors and attachments fixed).
func (r *Registry) cutOwnerLocked(entries []*entry, keep int64, locked *Execution) int64 {
	type item struct {
		en *entry
		p  part
	}
	var items []item
	var sizes []int64
	fixed := int64(0)
	for _, en := range entries {
		fixed += en.attached
		for p := range numParts {
			f := floor(p, en.parts[p])
			fixed += f
			if en.parts[p] > f {
				items = append(items, item{en, p})
				sizes = append(sizes, en.parts[p]-f)
			}
		}
	}
	level := waterLevel(sizes, keep-fixed)
	if level < 0 {
		return 0
	}
	// Oldest first: the order of the cuts does not change the shares.
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.en.finSeq, b.en.finSeq) })
	var freed int64
	for _, it := range items {
		f0 := floor(it.p, it.en.parts[it.p])
		if it.en.parts[it.p]-f0 <= level {
			continue
		}
		k := level + f0
		var f int64
		if it.en.e == locked {
			f = locked.cutLocked(it.p, k)
		} else {
			f = it.en.e.cut(it.p, k)
		}
		it.en.parts[it.p] -= f
		r.terminalBytes -= f
		r.buffered.Add(-f)
		freed += f
	}
	return freed
}

// cut cuts part p of a terminal execution down to at most keep bytes for
// the retention budget (see shareLocked) and returns the bytes freed.
func (e *Execution) cut(p part, keep int64) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cutLocked(p, keep)
}

// cutLocked is cut with e.mu held.
func (e *Execution) cutLocked(p part, keep int64) int64 {
	if !e.state.Terminal() {
		return 0
	}
	switch p {
	case partStdout:
		return e.shrinkLocked(Stdout, keep)
	case partStderr:
		return e.shrinkLocked(Stderr, keep)
	case partLines:
		return e.cutLinesLocked(keep)
	case partError:
		return e.cutErrorLocked(keep)
	}
	return 0
}

// cutLinesLocked keeps the first console lines whose cost (lineCost)
// fits in keep and drops the others, as ProDisco's caps drop the lines
// past them; the result then says stdout was truncated (ProDisco's
// output is the lines). It returns the bytes freed.
func (e *Execution) cutLinesLocked(keep int64) int64 {
	var n int64
	i := 0
	for ; i < len(e.lines); i++ {
		c := lineCost(e.lines[i])
		if n+c > keep {
			break
		}
		n += c
	}
	if i == len(e.lines) {
		return 0
	}
	// A new array: readers may hold the old slice (Lines, SubscribeLines).
	e.lines = slices.Clone(e.lines[:i])
	freed := e.lineBytes - n
	e.lineBytes = n
	e.result.StdoutTruncated = true
	return freed
}

// cutErrorLocked cuts Result.Error to at most keep bytes (at least
// MinErrorKeep), on a rune boundary, ending with errorCutMarker. It
// returns the bytes freed.
func (e *Execution) cutErrorLocked(keep int64) int64 {
	keep = max(keep, MinErrorKeep)
	s := e.result.Error
	if int64(len(s)) <= keep {
		return 0
	}
	n := int(keep) - len(errorCutMarker)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	e.result.Error = s[:n] + errorCutMarker // a new string: s is let go
	return int64(len(s) - len(e.result.Error))
}
