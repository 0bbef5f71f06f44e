package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// outputFormat is a client command's -o: text for people (the default),
// json or yaml for scripts. JSON is the API's own form (protojson: the
// proto's field names in lowerCamelCase, 64-bit integers as strings,
// enums by name, every field present even at its zero value), indented
// and byte-for-byte stable; YAML is the same document.
type outputFormat string

const (
	formatText outputFormat = "text"
	formatJSON outputFormat = "json"
	formatYAML outputFormat = "yaml"
)

func (f *outputFormat) String() string { return string(*f) }

func (f *outputFormat) Set(s string) error {
	switch v := outputFormat(s); v {
	case formatText, formatJSON, formatYAML:
		*f = v
		return nil
	}
	return fmt.Errorf("unknown output format %q (text, json, yaml)", s)
}

func (f *outputFormat) Type() string { return "format" }

// structured reports whether f is a format for programs.
func (f outputFormat) structured() bool { return f == formatJSON || f == formatYAML }

// addOutputFlag registers -o/--output on cmd.
func addOutputFlag(cmd *cobra.Command) *outputFormat {
	f := formatText
	cmd.Flags().VarP(&f, "output", "o", "output format: text, json or yaml (the API's JSON form, for scripts)")
	return &f
}

// printMessage writes m to w in format f (json or yaml).
func printMessage(w io.Writer, f outputFormat, m proto.Message) error {
	b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return printJSON(w, f, b)
}

// printValue writes v, encoded by encoding/json, to w in format f: for
// what has no message of its own in the API (doctor's report, version).
func printValue(w io.Writer, f outputFormat, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return printJSON(w, f, b)
}

// printJSON writes the JSON document b indented (protojson varies its
// spacing on purpose; json.Indent makes it stable), or as YAML.
func printJSON(w io.Writer, f outputFormat, b []byte) error {
	if f == formatYAML {
		y, err := yaml.JSONToYAML(b)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := out.WriteTo(w)
	return err
}
