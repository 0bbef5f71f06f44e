package mcpbridge

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

// FuzzWithoutNulls: withoutNulls returns arguments that are no JSON
// object as they are (null itself as {}), and an object without its null
// members and with every other member unchanged.
func FuzzWithoutNulls(f *testing.F) {
	f.Add([]byte(`{"labels":null,"warmpool":"a","timeout":1}`))
	f.Add([]byte(`{"a":{"b":null},"c":[null]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`["null"]`))
	f.Add([]byte(`{"a": null ,"a":2}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out := withoutNulls(in)
		var obj map[string]json.RawMessage
		if string(bytes.TrimSpace(in)) == "null" {
			if string(out) != "{}" {
				t.Fatalf("withoutNulls(%q) = %q, want {}", in, out)
			}
			return
		}
		if err := json.Unmarshal(in, &obj); err != nil || obj == nil {
			if !bytes.Equal(out, in) {
				t.Fatalf("withoutNulls(%q) = %q, want it unchanged", in, out)
			}
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("withoutNulls(%q) = %q: %v", in, out, err)
		}
		maps.DeleteFunc(obj, func(_ string, v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" })
		if len(got) != len(obj) {
			t.Fatalf("withoutNulls(%q) = %q, want members %v", in, out, obj)
		}
		for k, v := range obj {
			if !jsonEqual(t, got[k], v) {
				t.Fatalf("withoutNulls(%q): member %q is %s, want %s", in, k, got[k], v)
			}
		}
	})
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
