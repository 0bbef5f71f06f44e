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

// TestExecuteTestSameInGojaAndNode: one uvu test file gives the same
// pass/fail/skip and the same assertion messages per test in both runtimes.
func TestExecuteTestSameInGojaAndNode(t *testing.T) {
	in := requireSandbox(t)
	requireNode(t, in)
	tests := `
const log: string[] = [];
test.before(() => { log.push("before"); });
test.before.each(() => { log.push("each"); });
test("is", () => { assert.is(1 + 1, 2); });
test("equal fails", () => { assert.equal({ a: [1, 2] }, { a: [1, 3] }); });
test("throws", () => { assert.throws(() => { throw new Error("boom"); }, /boom/); });
test("not.ok fails", () => { assert.not.ok("x", "custom message"); });
test.skip("skipped", () => { assert.unreachable(); });
test("async", async () => { await new Promise(r => setTimeout(r, 5)); assert.ok(log.includes("before")); });
test("type fails", () => { assert.type(1, "string"); });
test("error thrown", () => { throw new TypeError("bad input"); });
`
	run := func(rt sandboxv1.Runtime) *sandboxv1.ExecuteTestResponse {
		resp, err := in.client.ExecuteTest(callCtx(t), &sandboxv1.ExecuteTestRequest{Tests: tests, Runtime: rt})
		if err != nil {
			t.Fatalf("%s: %v", rt, err)
		}
		return resp
	}
	g, n := run(sandboxv1.Runtime_RUNTIME_GOJA), run(sandboxv1.Runtime_RUNTIME_NODE)
	if len(g.GetTests()) != 8 || len(n.GetTests()) != 8 {
		t.Fatalf("goja %v (%q), node %v (%q)", g.GetSummary(), g.GetError(), n.GetSummary(), n.GetError()+n.GetErrorOutput())
	}
	for i := range g.GetTests() {
		gt, nt := g.GetTests()[i], n.GetTests()[i]
		if gt.GetName() != nt.GetName() || gt.GetPassed() != nt.GetPassed() || gt.GetSkipped() != nt.GetSkipped() || gt.GetError() != nt.GetError() {
			t.Errorf("test %d differs:\n goja %v\n node %v", i, gt, nt)
		}
	}
	gs, ns := g.GetSummary(), n.GetSummary()
	if gs.GetPassed() != 3 || gs.GetFailed() != 4 || gs.GetSkipped() != 1 || gs.String() != ns.String() {
		t.Errorf("summaries: goja %v node %v", gs, ns)
	}
}
