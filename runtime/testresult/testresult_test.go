package testresult

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWriterParseRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	in := []Result{
		{Name: "adds", Passed: true, DurationMs: 3},
		{Name: "fails", Error: "Expected values to be deeply equal:\n··[", DurationMs: 1},
		{Name: "later", Skipped: true},
		{Name: "", Error: "x"},
	}
	for _, r := range in {
		if err := w.Result(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Summary(Summary{Total: 4, Passed: 1, Failed: 2, Skipped: 1, Error: "after hook: boom"}); err != nil {
		t.Fatal(err)
	}
	sum, got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Total: 4, Passed: 1, Failed: 2, Skipped: 1, Error: "after hook: boom", Complete: true}
	if sum != want {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
	if !reflect.DeepEqual(got, in) {
		t.Errorf("results = %+v, want %+v", got, in)
	}
	if sum.OK() {
		t.Error("OK() = true for a run with failures")
	}
}

func TestParse(t *testing.T) {
	long := `{"name":"` + strings.Repeat("a", MaxLineBytes) + `","passed":true}` + "\n"
	tests := []struct {
		name    string
		input   string
		summary Summary
		results []Result
	}{
		{
			name:    "empty",
			summary: Summary{},
		},
		{
			name:    "no tests defined",
			input:   `{"summary":{"total":0,"passed":0,"failed":0,"skipped":0},"error":"no tests defined"}` + "\n",
			summary: Summary{Error: "no tests defined", Complete: true},
		},
		{
			name: "garbage between lines",
			input: "hello\n{\"name\":\"a\",\"passed\":true,\"duration_ms\":2}\n[1,2]\nnull\n{}\n{\"foo\":1}\n\x00\xff\n" +
				`{"name":"b","passed":false,"error":"boom","duration_ms":1}` + "\n" +
				`{"summary":{"total":2,"passed":1,"failed":1,"skipped":0}}` + "\n",
			summary: Summary{Total: 2, Passed: 1, Failed: 1, Complete: true},
			results: []Result{{Name: "a", Passed: true, DurationMs: 2}, {Name: "b", Error: "boom", DurationMs: 1}},
		},
		{
			name:    "no summary: counted, incomplete",
			input:   `{"name":"a","passed":true}` + "\n" + `{"name":"b","skipped":true}` + "\n" + `{"name":"c","passed":false,"error":"x"}` + "\n" + `{"name":"d","pas`,
			summary: Summary{Total: 3, Passed: 1, Failed: 1, Skipped: 1},
			results: []Result{{Name: "a", Passed: true}, {Name: "b", Skipped: true}, {Name: "c", Error: "x"}},
		},
		{
			name:    "line too long skipped",
			input:   long + `{"name":"short","passed":true}` + "\n",
			summary: Summary{Total: 1, Passed: 1},
			results: []Result{{Name: "short", Passed: true}},
		},
		{
			name:    "lines after summary ignored",
			input:   `{"name":"a","passed":true}` + "\n" + `{"summary":{"total":1,"passed":1,"failed":0,"skipped":0}}` + "\n" + `{"name":"forged","passed":true}` + "\n" + `{"summary":{"total":9,"passed":9,"failed":0,"skipped":0}}`,
			summary: Summary{Total: 1, Passed: 1, Complete: true},
			results: []Result{{Name: "a", Passed: true}},
		},
		{
			name:    "negative counts rejected, negative duration clamped",
			input:   `{"summary":{"total":-1,"passed":0,"failed":0,"skipped":0}}` + "\n" + `{"name":"a","passed":true,"duration_ms":-5}` + "\n",
			summary: Summary{Total: 1, Passed: 1},
			results: []Result{{Name: "a", Passed: true}},
		},
		{
			name:    "a run of invalid bytes is one U+FFFD",
			input:   "{\"name\":\"a\xff\xfeb\",\"passed\":false,\"error\":\"x\xe2\x82y\"}\n",
			summary: Summary{Total: 1, Failed: 1},
			results: []Result{{Name: "a\uFFFDb", Error: "x\uFFFDy"}},
		},
		{
			name:    "passed and skipped is skipped",
			input:   `{"name":"a","passed":true,"skipped":true}` + "\n",
			summary: Summary{Total: 1, Skipped: 1},
			results: []Result{{Name: "a", Skipped: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, got, err := Parse(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if sum != tt.summary {
				t.Errorf("summary = %+v, want %+v", sum, tt.summary)
			}
			if !reflect.DeepEqual(got, tt.results) {
				t.Errorf("results = %+v, want %+v", got, tt.results)
			}
		})
	}
}

func TestParseCaps(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Result(Result{Name: strings.Repeat("n", MaxNameBytes*2), Error: strings.Repeat("é", MaxErrorBytes)}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < MaxResults+5; i++ {
		if err := w.Result(Result{Name: "t", Error: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	// A forged line beyond the writer's cap: Parse must still bound it.
	buf.WriteString(`{"name":"extra","passed":true}` + "\n")
	sum, got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxResults {
		t.Fatalf("kept %d results, want %d", len(got), MaxResults)
	}
	if sum.Total != MaxResults+1 || sum.Failed != MaxResults || sum.Passed != 1 || sum.Complete {
		t.Errorf("summary = %+v", sum)
	}
	r := got[0]
	if len(r.Name) > MaxNameBytes || len(r.Error) > MaxErrorBytes || !utf8.ValidString(r.Error) {
		t.Errorf("caps not applied: name %d bytes, error %d bytes, valid %v", len(r.Name), len(r.Error), utf8.ValidString(r.Error))
	}
	if !strings.HasSuffix(r.Name, truncatedMark) {
		t.Errorf("truncated name lacks the marker: %q", r.Name[len(r.Name)-20:])
	}
}

type failingReader struct{ data io.Reader }

var errBroken = errors.New("broken pipe")

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errBroken
	}
	return n, err
}

func TestParseReadError(t *testing.T) {
	sum, got, err := Parse(&failingReader{strings.NewReader(`{"name":"a","passed":true}` + "\n")})
	if !errors.Is(err, errBroken) {
		t.Fatalf("err = %v, want %v", err, errBroken)
	}
	if len(got) != 1 || sum.Total != 1 || sum.Complete {
		t.Errorf("partial read lost: %+v %+v", sum, got)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{strings.Repeat("a", 20), 16, "aa" + truncatedMark},
		{"ééé", 3, "é"},
		{"a\xffb", 10, "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Truncate(tt.in, tt.n); got != tt.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"name":"a","passed":true,"duration_ms":1}` + "\n" + `{"summary":{"total":1,"passed":1,"failed":0,"skipped":0}}` + "\n"))
	f.Add([]byte(`{"summary":{"total":0,"passed":0,"failed":0,"skipped":0},"error":"no tests defined"}`))
	f.Add([]byte("garbage\n\x00{\"name\":1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sum, results, err := Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Parse of an in-memory reader failed: %v", err)
		}
		if len(results) > MaxResults {
			t.Fatalf("%d results kept", len(results))
		}
		for _, r := range results {
			if len(r.Name) > MaxNameBytes || len(r.Error) > MaxErrorBytes || r.DurationMs < 0 || (r.Passed && r.Skipped) {
				t.Fatalf("result out of bounds: %+v", r)
			}
		}
		if sum.Total < 0 || sum.Passed < 0 || sum.Failed < 0 || sum.Skipped < 0 || len(sum.Error) > MaxErrorBytes {
			t.Fatalf("summary out of bounds: %+v", sum)
		}
		if !sum.Complete && sum.Total != sum.Passed+sum.Failed+sum.Skipped {
			t.Fatalf("counted summary inconsistent: %+v", sum)
		}
	})
}
