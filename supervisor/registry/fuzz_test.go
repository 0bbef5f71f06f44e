package registry

import (
	"bytes"
	"context"
	"testing"
	"unicode/utf8"
)

// FuzzRead writes data in chunks chosen by cuts to a buffer of a fuzzed cap,
// reading after every write, and checks that Read never panics, that next
// never goes backwards or past the end, that valid UTF-8 is never split, and
// that without truncation paging by next returns exactly what was written.
func FuzzRead(f *testing.F) {
	f.Add([]byte("a€b😀c"), uint16(4), []byte{1, 2, 3})
	f.Add([]byte("héllo wörld"), uint16(1000), []byte{1, 1, 1, 1, 1})
	f.Add([]byte("\xff\x80\xe2\x82"), uint16(2), []byte{0, 1, 7})
	f.Fuzz(func(t *testing.T, data []byte, capBytes uint16, cuts []byte) {
		capacity := int64(capBytes%(uint16(len(data))+8)) + 1
		r := New(Config{})
		e := r.Create(Meta{MaxOutputBytes: capacity})
		// mixed gets the same chunks alternately on stdout and stderr and is
		// read back through a subscription.
		mixed := r.Create(Meta{MaxOutputBytes: capacity})
		var want [2][]byte
		valid := utf8.Valid(data)
		var paged []byte
		var next int64
		check := func(what string, off int64, final bool) {
			d, nx, _, err := e.Read(Stdout, off)
			if err != nil {
				t.Fatalf("%s: Read(%d): %v", what, off, err)
			}
			written := e.Output(Stdout).WrittenBytes
			if nx < 0 || nx > written {
				t.Fatalf("%s: next %d outside [0, %d]", what, nx, written)
			}
			if valid && !utf8.Valid(d) {
				t.Fatalf("%s: Read(%d) = %q splits UTF-8 of %q", what, off, d, data)
			}
			if int64(len(d)) > capacity {
				t.Fatalf("%s: %d bytes returned, cap %d", what, len(d), capacity)
			}
		}
		pos := 0
		for i, c := range cuts {
			n := min(int(c)%13, len(data)-pos)
			e.Write(Stdout, data[pos:pos+n])
			mixed.Write(Stream(i%2), data[pos:pos+n])
			want[i%2] = append(want[i%2], data[pos:pos+n]...)
			pos += n
			check("arbitrary", int64(c)*int64(i+1)%int64(len(data)+2), false)
			d, nx, _, err := e.Read(Stdout, next)
			if err != nil {
				t.Fatal(err)
			}
			if nx < next {
				t.Fatalf("next went back from %d to %d", next, nx)
			}
			paged = append(paged, d...)
			next = nx
		}
		e.Write(Stdout, data[pos:])
		e.Finish(completed())
		mixed.Write(Stdout, data[pos:])
		want[Stdout] = append(want[Stdout], data[pos:]...)
		mixed.Finish(completed())
		var got [2][]byte
		for ev, err := range mixed.Subscribe(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Result == nil && utf8.Valid(want[ev.Stream]) && !utf8.Valid(ev.Data) {
				t.Fatalf("event %+v splits UTF-8", ev)
			}
			got[ev.Stream] = append(got[ev.Stream], ev.Data...)
		}
		for s := range got {
			if int64(len(want[s])) <= capacity && !bytes.Equal(got[s], want[s]) {
				t.Fatalf("subscription %v = %q, want %q", Stream(s), got[s], want[s])
			}
		}
		d, nx, gap, err := e.Read(Stdout, next)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, d...)
		if nx != int64(len(data)) {
			t.Fatalf("final next %d, want %d", nx, len(data))
		}
		truncated := int64(len(data)) > capacity
		if !truncated && (gap || !bytes.Equal(paged, data)) {
			t.Fatalf("paged %q, want %q", paged, data)
		}
		// Every offset for short inputs; a sample of them for long ones.
		step := max(int64(len(data))/256, 1)
		for off := int64(0); off <= int64(len(data))+1; off += step {
			for k := range min(step, 4) {
				check("final", off+k, true)
			}
		}
		all, _, gap, _ := e.Read(Stdout, 0)
		if gap != truncated {
			t.Fatalf("Read(0) gap %v, truncated %v", gap, truncated)
		}
		if !truncated && !bytes.Equal(all, data) {
			t.Fatalf("Read(0) = %q, want %q", all, data)
		}
	})
}

// FuzzShrink: a terminal stream cut to its share of the retention budget
// keeps at most that many bytes, a prefix and a suffix of what was written
// (never a split UTF-8 sequence of valid output), with a gap between them,
// and reads at every offset stay within the stream.
func FuzzShrink(f *testing.F) {
	f.Add([]byte("a€b😀c and more text"), uint16(64), uint16(5))
	f.Add([]byte("héllo wörld"), uint16(4), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, capBytes, keep uint16) {
		r := New(Config{})
		e := r.Create(Meta{MaxOutputBytes: int64(capBytes) + 1})
		e.Write(Stdout, data)
		e.Finish(completed())
		before := e.Output(Stdout)
		k := int64(keep)
		freed := e.cut(partStdout, k)
		after := e.Output(Stdout)
		if after.KeptBytes != before.KeptBytes-freed || (freed > 0 && after.KeptBytes > max(k, 2)) {
			t.Fatalf("kept %d -> %d, freed %d, keep %d", before.KeptBytes, after.KeptBytes, freed, k)
		}
		all, next, gap, err := e.Read(Stdout, 0)
		if err != nil || next != int64(len(data)) {
			t.Fatalf("Read(0): next %d err %v", next, err)
		}
		if freed > 0 && !gap {
			t.Fatal("a shrunk stream reads without a gap")
		}
		if utf8.Valid(data) && !utf8.Valid(all) {
			t.Fatalf("Read(0) = %q splits UTF-8 of %q", all, data)
		}
		if !gap && !bytes.Equal(all, data) {
			t.Fatalf("Read(0) = %q, want %q", all, data)
		}
		for off := int64(0); off <= int64(len(data)); off++ {
			if d, nx, _, err := e.Read(Stdout, off); err != nil || nx != int64(len(data)) || int64(len(d)) > after.KeptBytes {
				t.Fatalf("Read(%d) = %d bytes, next %d, err %v", off, len(d), nx, err)
			}
		}
		if res, _ := e.Result(); freed > 0 && !res.StdoutTruncated {
			t.Fatal("the result does not say the stream was cut")
		}
	})
}
