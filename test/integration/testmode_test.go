//go:build linux

package integration

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// fibonacci is the seed's test-mode example (seeds/000, "Test Mode Usage
// Example").
const fibonacciCode = `
    function fibonacci(n: number): number[] {
      if (n <= 0) return [];
      if (n === 1) return [0];
      const seq = [0, 1];
      for (let i = 2; i < n; i++) {
        seq.push(seq[i-1] + seq[i-2]);
      }
      return seq;
    }
`

const fibonacciTests = `
    test("fibonacci(0) returns empty array", () => {
      assert.equal(fibonacci(0), []);
    });

    test("fibonacci(5) returns correct sequence", () => {
      assert.equal(fibonacci(5), [0, 1, 1, 2, 3]);
    });

    test("each number is sum of previous two", () => {
      const seq = fibonacci(10);
      for (let i = 2; i < seq.length; i++) {
        assert.is(seq[i], seq[i-1] + seq[i-2]);
      }
    });
`

func TestExecuteTestFibonacci(t *testing.T) {
	in := requireSandbox(t)
	resp, err := in.client.ExecuteTest(callCtx(t), &sandboxv1.ExecuteTestRequest{Code: ptrTo(fibonacciCode), Tests: fibonacciTests})
	if err != nil {
		t.Fatal(err)
	}
	s := resp.GetSummary()
	if !resp.GetSuccess() || s.GetTotal() != 3 || s.GetPassed() != 3 || s.GetFailed() != 0 || s.GetSkipped() != 0 {
		t.Fatalf("success %v summary %v error %q output %q", resp.GetSuccess(), s, resp.GetError(), resp.GetOutput())
	}
	for i, tr := range resp.GetTests() {
		if !tr.GetPassed() || tr.GetDurationMs() < 0 || tr.GetName() == "" {
			t.Errorf("test %d = %v", i, tr)
		}
	}
	if resp.GetTests()[0].GetName() != "fibonacci(0) returns empty array" {
		t.Errorf("first test = %q", resp.GetTests()[0].GetName())
	}
}

func TestExecuteTestFailuresSkipsAndFloods(t *testing.T) {
	in := requireSandbox(t)
	tests := `
test("equal fails", () => { assert.equal([1], [2]); });
test.skip("skipped", () => {});
test("flood", () => { const line = "x".repeat(1023) + "\n"; for (let i = 0; i < 10240; i++) console.log(line); });
`
	resp, err := in.client.ExecuteTest(callCtx(t), &sandboxv1.ExecuteTestRequest{Tests: tests})
	if err != nil {
		t.Fatal(err)
	}
	s := resp.GetSummary()
	if resp.GetSuccess() || s.GetTotal() != 3 || s.GetPassed() != 1 || s.GetFailed() != 1 || s.GetSkipped() != 1 {
		t.Fatalf("success %v summary %v error %q", resp.GetSuccess(), s, resp.GetError())
	}
	first := resp.GetTests()[0]
	if first.GetPassed() || !strings.HasPrefix(first.GetError(), "Expected values to be deeply equal:") {
		t.Fatalf("equal([1],[2]) result = %v", first)
	}
	if !resp.GetTests()[1].GetSkipped() {
		t.Errorf("skip result = %v", resp.GetTests()[1])
	}
	if !resp.GetOutcome().GetStdoutTruncated() {
		t.Errorf("10 MB of output was not truncated: outcome %v", resp.GetOutcome())
	}
}

func TestExecuteTestErrors(t *testing.T) {
	in := requireSandbox(t)
	_, err := in.client.ExecuteTest(callCtx(t), &sandboxv1.ExecuteTestRequest{Code: ptrTo("const a = 1")})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("missing tests: %v, want INVALID_ARGUMENT", err)
	}
	resp, err := in.client.ExecuteTest(callCtx(t), &sandboxv1.ExecuteTestRequest{Tests: "const defined = 1;"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSuccess() || !strings.Contains(resp.GetError(), "no tests") {
		t.Fatalf("no tests defined: success %v error %q", resp.GetSuccess(), resp.GetError())
	}
}
