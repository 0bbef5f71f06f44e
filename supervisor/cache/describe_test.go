package cache

import (
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	long := strings.Repeat("é", MaxDescriptionRunes+50)
	tests := []struct {
		name, code, want string
	}{
		{"line comment", "// List all pods\nconst x = 1;", "List all pods"},
		{"line comment after blank lines", "\n\n   \n  // List pods  \ncode()", "List pods"},
		{"triple slash", "/// <reference types=\"node\" />", `<reference types="node" />`},
		{"empty line comment skipped", "//\n// real text\n", "real text"},
		{"block comment one line", "/* Get nodes */\nfoo()", "Get nodes"},
		{"jsdoc one line", "/** Get nodes */", "Get nodes"},
		{"jsdoc first line bare", "/**\n * Watch deployments\n * in all namespaces\n */\nrun()", "Watch deployments"},
		{"block comment unterminated", "/* open\nstill open", "open"},
		{"empty block then code", "/**/\nconsole.log(1)", "console.log(1)"},
		{"empty multi-line block then comment", "/*\n *\n */\n// after", "after"},
		{"block text after stars on later line", "/*\n   ** Deep */", "Deep"},
		{"hash comment", "# Disk usage\ndf -h", "Disk usage"},
		{"shebang skipped", "#!/usr/bin/env node\n// Real description", "Real description"},
		{"code fallback", "  const pods = await k8s.list();  \n// later", "const pods = await k8s.list();"},
		{"empty", "", DefaultDescription},
		{"only blanks", " \n\t\n", DefaultDescription},
		{"only shebang", "#!/bin/sh", DefaultDescription},
		{"only empty comments", "//\n/* */\n#", DefaultDescription},
		{"byte order mark", "\uFEFF// BOM first", "BOM first"},
		{"crlf", "// Windows line\r\ncode", "Windows line"},
		{"tabs and controls become spaces", "//\tTab\x01here", "Tab here"},
		{"bidi controls dropped", "// safe\u202Etxt.exe", "safetxt.exe"},
		{"invalid utf8 replaced", "// bad \xff byte", "bad \uFFFD byte"},
		{"capped", "// " + long, strings.Repeat("é", MaxDescriptionRunes)},
		{"code capped", long, strings.Repeat("é", MaxDescriptionRunes)},
		{"comment of only controls skipped", "// \x01\x02\nnext()", "next()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(tt.code); got != tt.want {
				t.Errorf("Describe(%q) = %q, want %q", tt.code, got, tt.want)
			}
		})
	}
}
