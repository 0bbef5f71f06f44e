package testresult

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPayload(t *testing.T) {
	n := NewNonce()
	if len(n) != 2*NonceBytes || n == NewNonce() {
		t.Fatalf("nonce %q", n)
	}
	b := EncodePayload(n, "return 1;\nx")
	gotN, prog, err := DecodePayload(b)
	if err != nil || gotN != n || prog != "return 1;\nx" || PayloadNonce(b) != n {
		t.Errorf("decode: %q %q %v", gotN, prog, err)
	}
	for _, bad := range []string{"", "abc\nx", strings.Repeat("g", 32) + "\nx", strings.Repeat("a", 33) + "\n"} {
		if _, _, err := DecodePayload([]byte(bad)); err == nil || PayloadNonce([]byte(bad)) != "" {
			t.Errorf("DecodePayload(%q) accepted", bad)
		}
	}
}

// TestAuthenticate: only the lines the harness wrote (with the nonce)
// reach Parse; the first other line makes the channel forged.
func TestAuthenticate(t *testing.T) {
	const n = "0123456789abcdef0123456789abcdef"
	var ok bytes.Buffer
	w := NewNonceWriter(&ok, n)
	_ = w.Result(Result{Name: "a", Passed: true})
	_ = w.Summary(Summary{Total: 1, Passed: 1})
	sum, res, err := Parse(bytes.NewReader(Authenticate(ok.Bytes(), n)))
	if err != nil || !sum.OK() || len(res) != 1 {
		t.Fatalf("harness lines: %+v %+v %v", sum, res, err)
	}
	forged := `{"name":"a","passed":true}` + "\n" + `{"summary":{"total":1,"passed":1,"failed":0,"skipped":0}}` + "\n"
	for name, in := range map[string]string{
		"lines without the nonce":          forged,
		"forged lines before the harness'": forged + ok.String(),
		"forged lines after the harness'":  ok.String()[:strings.Index(ok.String(), "\n")+1] + forged,
		"another nonce":                    strings.ReplaceAll(ok.String(), n, strings.Repeat("f", 32)),
	} {
		sum, _, _ := Parse(bytes.NewReader(Authenticate([]byte(in), n)))
		if sum.OK() || !sum.Forged {
			t.Errorf("%s: %+v", name, sum)
		}
	}
	if sum, _, _ := Parse(bytes.NewReader(Authenticate(ok.Bytes(), ""))); sum.OK() {
		t.Errorf("no nonce: %+v", sum)
	}
}

// TestParseSummaryMustMatchResults: a summary whose counts are not those
// of the result lines before it is not the harness' summary.
func TestParseSummaryMustMatchResults(t *testing.T) {
	for _, in := range []string{
		`{"summary":{"total":3,"passed":3,"failed":0,"skipped":0}}`,
		`{"name":"a","passed":false,"error":"x"}` + "\n" + `{"summary":{"total":1,"passed":1,"failed":0,"skipped":0}}`,
		`{"name":"a","passed":true}` + "\n" + `{"summary":{"total":2,"passed":1,"failed":0,"skipped":0}}`,
	} {
		if sum, _, _ := Parse(strings.NewReader(in + "\n")); sum.Complete || sum.OK() {
			t.Errorf("%q: %+v", in, sum)
		}
	}
}

func TestModuleNames(t *testing.T) {
	got := ModuleNames(`import { add, sub as minus } from "./add"; // déjà
const x = add(1, 2); if (x) await import("./m"); let ünï = 1; $a_b`)
	for _, w := range []string{"add", "sub", "minus", "from", "x", "ünï", "$a_b", "déjà"} {
		if !slices.Contains(got, w) {
			t.Errorf("%q missing from %q", w, got)
		}
	}
	for _, w := range []string{"import", "const", "if", "await", "let"} {
		if slices.Contains(got, w) {
			t.Errorf("%q in %q", w, got)
		}
	}
	many := strings.Repeat("a ", 1) + strings.Repeat("x", maxModuleNameLen+1)
	if slices.Contains(ModuleNames(many), strings.Repeat("x", maxModuleNameLen+1)) {
		t.Error("a name over the length bound was offered")
	}
	var b strings.Builder
	for i := range MaxModuleNames + 10 {
		b.WriteString("n" + strconv.Itoa(i) + " ")
	}
	if n := len(ModuleNames(b.String())); n != MaxModuleNames {
		t.Errorf("%d names, want the bound %d", n, MaxModuleNames)
	}
}
