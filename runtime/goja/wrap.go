package goja

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Top-level await needs an async function around the program. The prefix
// shares the first line with the program so line numbers stay those of the
// user's code; only columns on line 1 move, and wrap corrects the source map
// for that.
const (
	wrapPrefix = "(async () => {"
	wrapSuffix = "\n})();"
)

const sourceMapPrefix = "//# sourceMappingURL="

// wrap returns program wrapped in an async arrow function. A trailing
// source-map comment is moved after the wrapper, where goja looks for it,
// and its mappings are shifted right by len(wrapPrefix) on line 1. A leading
// hashbang line is turned into a comment.
func wrap(program string) string {
	if strings.HasPrefix(program, "#!") {
		program = "//" + program
	}
	body, smLine := splitSourceMap(program)
	var b strings.Builder
	b.Grow(len(program) + 64)
	b.WriteString(wrapPrefix)
	b.WriteString(body)
	b.WriteString(wrapSuffix)
	if smLine != "" {
		b.WriteString("\n")
		b.WriteString(shiftSourceMapURL(smLine, len(wrapPrefix)))
		b.WriteString("\n")
	}
	return b.String()
}

// splitSourceMap cuts a source-map comment from the last non-empty line of
// program. It returns program unchanged and "" when there is none.
func splitSourceMap(program string) (body, smLine string) {
	trimmed := strings.TrimRight(program, " \t\r\n")
	i := strings.LastIndexByte(trimmed, '\n')
	last := trimmed[i+1:]
	if !strings.HasPrefix(last, sourceMapPrefix) {
		return program, ""
	}
	return trimmed[:i+1], last
}

// shiftSourceMapURL moves the generated columns of line 1 in an inline
// (base64 data URL) source map by shift. Anything it cannot parse is
// returned unchanged: a source map only improves stack traces.
func shiftSourceMapURL(line string, shift int) string {
	url := strings.TrimPrefix(line, sourceMapPrefix)
	const dataPrefix = "data:application/json"
	comma := strings.IndexByte(url, ',')
	if !strings.HasPrefix(url, dataPrefix) || comma < 0 || !strings.Contains(url[:comma], ";base64") {
		return line
	}
	raw, err := base64.StdEncoding.DecodeString(url[comma+1:])
	if err != nil {
		return line
	}
	var sm map[string]any
	if err := json.Unmarshal(raw, &sm); err != nil {
		return line
	}
	mappings, ok := sm["mappings"].(string)
	if !ok {
		return line
	}
	sm["mappings"] = shiftFirstLine(mappings, shift)
	out, err := json.Marshal(sm)
	if err != nil {
		return line
	}
	return sourceMapPrefix + url[:comma+1] + base64.StdEncoding.EncodeToString(out)
}

// shiftFirstLine adds shift to the generated column of the first segment of
// the first line of a source map's "mappings". Later segments on the line
// are relative to it (Source Map Revision 3, "mappings"), so they follow.
func shiftFirstLine(mappings string, shift int) string {
	if mappings == "" || mappings[0] == ';' || mappings[0] == ',' {
		return mappings
	}
	col, n, ok := decodeVLQ(mappings)
	if !ok {
		return mappings
	}
	return encodeVLQ(col+shift) + mappings[n:]
}

const base64Digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// decodeVLQ decodes one base64 VLQ value from the start of s and returns it
// with the number of bytes read.
func decodeVLQ(s string) (value, n int, ok bool) {
	shift := 0
	for n < len(s) {
		d := strings.IndexByte(base64Digits, s[n])
		n++
		if d < 0 || shift > 28 {
			return 0, 0, false
		}
		value |= (d & 31) << shift
		shift += 5
		if d&32 == 0 {
			if value&1 != 0 {
				return -(value >> 1), n, true
			}
			return value >> 1, n, true
		}
	}
	return 0, 0, false
}

// encodeVLQ encodes v as base64 VLQ.
func encodeVLQ(v int) string {
	u := v << 1
	if v < 0 {
		u = (-v << 1) | 1
	}
	var b strings.Builder
	for {
		d := u & 31
		u >>= 5
		if u > 0 {
			d |= 32
		}
		b.WriteByte(base64Digits[d])
		if u == 0 {
			return b.String()
		}
	}
}
