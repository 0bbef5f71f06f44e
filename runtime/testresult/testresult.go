package testresult

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/execfarm/execfarm/internal/utf8text"
)

// Caps shared by writers and Parse.
const (
	// MaxResults is the number of result lines a writer emits and Parse
	// keeps; later tests are still counted in the summary.
	MaxResults = 10000
	// MaxNameBytes caps a test name, in bytes of UTF-8.
	MaxNameBytes = 1024
	// MaxErrorBytes caps a test's or the summary's error, in bytes of UTF-8.
	MaxErrorBytes = 8192
	// DetailsMaxBytes is the longest uvu assertion details (its diff), in
	// bytes, that is appended to the assertion's message; longer details
	// are dropped and only the message is reported.
	DetailsMaxBytes = 2048
	// MaxLineBytes is the longest line Parse accepts; longer lines are
	// skipped. Lines written within the caps above are far shorter.
	MaxLineBytes = 64 << 10
)

// truncatedMark ends a string cut to its cap.
const truncatedMark = "…[truncated]"

// Result is the outcome of one test.
type Result struct {
	// Name is the name given to test(); at most MaxNameBytes.
	Name string
	// Passed is true when the test and its each-hooks ran without throwing.
	// false for a failed or a skipped test.
	Passed bool
	// Skipped is true for a test.skip, and for a plain test when some
	// test.only exists; it did not run.
	Skipped bool
	// Error is why the test failed; "" when it passed or was skipped. At
	// most MaxErrorBytes.
	Error string
	// DurationMs is the wall time of the test and its each-hooks, in
	// milliseconds, rounded down; 0 for a skipped test.
	DurationMs int64
}

// Summary is the outcome of a whole test run.
type Summary struct {
	// Total counts every registered test: Passed + Failed + Skipped.
	Total int
	// Passed, Failed and Skipped count tests by outcome.
	Passed, Failed, Skipped int
	// Error is a failure outside any single test (see the package
	// documentation); "" when there was none.
	Error string
	// Complete is true when the runtime wrote its summary line; false means
	// it stopped early (killed, timed out) and the counts were made from
	// the result lines read. A summary line whose counts disagree with
	// the result lines before it is not taken.
	Complete bool
	// Forged is true when something other than the runtime's harness
	// wrote on the results channel (Authenticate); the run cannot pass.
	Forged bool
}

// OK reports whether the run succeeded: complete, no error, no failed test.
func (s Summary) OK() bool {
	return s.Complete && !s.Forged && s.Error == "" && s.Failed == 0
}

// Counts is the "summary" object of a summary line.
type Counts struct {
	Total   int `json:"total"`   // every registered test
	Passed  int `json:"passed"`  // tests that passed
	Failed  int `json:"failed"`  // tests that failed or did not run
	Skipped int `json:"skipped"` // tests skipped (test.skip, or not test.only)
}

// Line is one JSON line of the results channel as written by Writer and
// read by Parse: a result line when Summary is nil (name and passed are then
// always present), else the final summary line, whose Error is the run's
// error.
type Line struct {
	Name       string  `json:"name,omitempty"`        // as Result.Name
	Passed     bool    `json:"passed,omitempty"`      // as Result.Passed
	Skipped    bool    `json:"skipped,omitempty"`     // as Result.Skipped
	Error      string  `json:"error,omitempty"`       // Result.Error, or Summary.Error on the summary line
	DurationMs int64   `json:"duration_ms,omitempty"` // as Result.DurationMs, milliseconds
	Summary    *Counts `json:"summary,omitempty"`     // nil on a result line
	Forged     bool    `json:"forged,omitempty"`      // Authenticate's mark
}

// resultLine is the written form of a result line: name, passed and
// duration_ms are always present.
type resultLine struct {
	Name       string `json:"name"`
	Passed     bool   `json:"passed"`
	Skipped    bool   `json:"skipped,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"duration_ms"`
}

// keys tells a result line from other objects: it has name or passed.
type keys struct {
	Name   *string `json:"name"`
	Passed *bool   `json:"passed"`
}

// Writer writes result and summary lines, applying the caps. It is not safe
// for concurrent use.
type Writer struct {
	w       io.Writer
	results int
	prefix  []byte // the nonce and a space, or nothing
}

// NewWriter returns a Writer that writes one line per call to w, each in a
// single Write so that a reader sees whole lines.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// NewNonceWriter is NewWriter whose lines start with nonce and a space
// (EncodePayload, Authenticate).
func NewNonceWriter(w io.Writer, nonce string) *Writer {
	return &Writer{w: w, prefix: []byte(nonce + " ")}
}

// Result writes the line of one test; past MaxResults lines it writes
// nothing. It returns the error of the underlying writer.
func (w *Writer) Result(r Result) error {
	if w.results >= MaxResults {
		return nil
	}
	w.results++
	return w.line(resultLine{
		Name:       Truncate(r.Name, MaxNameBytes),
		Passed:     r.Passed && !r.Skipped,
		Skipped:    r.Skipped,
		Error:      Truncate(r.Error, MaxErrorBytes),
		DurationMs: max(r.DurationMs, 0),
	})
}

// Summary writes the final line. Complete is ignored.
func (w *Writer) Summary(s Summary) error {
	return w.line(Line{
		Summary: &Counts{Total: s.Total, Passed: s.Passed, Failed: s.Failed, Skipped: s.Skipped},
		Error:   Truncate(s.Error, MaxErrorBytes),
	})
}

func (w *Writer) line(l any) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode test result: %w", err)
	}
	b = append(append(w.prefix[:len(w.prefix):len(w.prefix)], b...), '\n')
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("write test result: %w", err)
	}
	return nil
}

// Truncate cuts s to at most n bytes on a UTF-8 boundary, ending it with a
// marker when it was cut. Invalid UTF-8 is replaced first, by package
// utf8text's rule (a run of invalid bytes is one U+FFFD).
func Truncate(s string, n int) string {
	s = utf8text.String(s)
	if len(s) <= n {
		return s
	}
	mark := truncatedMark
	if n < len(mark) {
		mark = ""
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// Parse reads the results channel until EOF. It skips lines that are not
// JSON objects of the format, lines longer than MaxLineBytes and any result
// line after the summary line; it keeps at most MaxResults results and caps
// their strings. Without a summary line the Summary is counted from the
// results and Complete is false. The error is that of r, other than EOF;
// what was read before it is returned with it.
func Parse(r io.Reader) (Summary, []Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		sum      Summary
		results  []Result
		counted  Counts
		readErr  error
		longLine bool
	)
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			longLine = true
			continue
		case longLine:
			// The tail of a line longer than the buffer.
			longLine = false
		case len(chunk) > 0 && !sum.Complete && !sum.Forged:
			parseLine(chunk, &sum, &results, &counted)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = fmt.Errorf("read test results: %w", err)
			}
			break
		}
	}
	if !sum.Complete {
		sum.Total, sum.Passed, sum.Failed, sum.Skipped = counted.Total, counted.Passed, counted.Failed, counted.Skipped
	}
	return sum, results, readErr
}

// parseLine decodes one line into sum (a summary line) or results.
func parseLine(b []byte, sum *Summary, results *[]Result, counted *Counts) {
	// The program wrote the line: its invalid UTF-8 is replaced by
	// utf8text's rule (a run is one U+FFFD) before encoding/json, which
	// would replace each invalid byte, reads it.
	if !utf8.Valid(b) {
		b = []byte(utf8text.Bytes(b))
	}
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return
	}
	if l.Forged {
		sum.Forged = true
		return
	}
	if l.Summary != nil {
		c := *l.Summary
		if c.Total < 0 || c.Passed < 0 || c.Failed < 0 || c.Skipped < 0 {
			return
		}
		// The summary counts the tests the harness reported, each once:
		// any other count is not the harness' summary.
		if c.Total != c.Passed+c.Failed+c.Skipped || (counted.Total < MaxResults && *counted != c) || c.Total < counted.Total {
			return
		}
		sum.Total, sum.Passed, sum.Failed, sum.Skipped = c.Total, c.Passed, c.Failed, c.Skipped
		sum.Error = Truncate(l.Error, MaxErrorBytes)
		sum.Complete = true
		return
	}
	var k keys
	if err := json.Unmarshal(b, &k); err != nil || (k.Name == nil && k.Passed == nil) {
		return // not a result line, e.g. {} or a foreign object
	}
	counted.Total++
	switch {
	case l.Skipped:
		counted.Skipped++
	case l.Passed:
		counted.Passed++
	default:
		counted.Failed++
	}
	if len(*results) >= MaxResults {
		return
	}
	*results = append(*results, Result{
		Name:       Truncate(l.Name, MaxNameBytes),
		Passed:     l.Passed && !l.Skipped,
		Skipped:    l.Skipped,
		Error:      Truncate(l.Error, MaxErrorBytes),
		DurationMs: max(l.DurationMs, 0),
	})
}
