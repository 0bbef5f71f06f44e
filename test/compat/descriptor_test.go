package compat

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/execfarm/execfarm/proto/sandboxv1"
)

// firstExtensionField is where execfarm's additions to ProDisco's messages
// start: extensions are additive only, from field 100 up, so that they
// never collide with fields ProDisco may add.
const firstExtensionField = 100

// prodiscoDescriptor returns the FileDescriptorProto that proto-loader
// builds from prodisco_sandbox.proto, i.e. exactly what the Node.js client
// puts on the wire.
func prodiscoDescriptor(t *testing.T) *descriptorpb.FileDescriptorProto {
	t.Helper()
	var out struct {
		FileDescriptorProto string `json:"fileDescriptorProto"`
	}
	if err := json.Unmarshal(runNode(t, "--descriptor"), &out); err != nil {
		t.Fatalf("decode client.mjs --descriptor output: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(out.FileDescriptorProto)
	if err != nil {
		t.Fatalf("decode descriptor base64: %v", err)
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(raw, fdp); err != nil {
		t.Fatalf("unmarshal FileDescriptorProto: %v", err)
	}
	return fdp
}

// TestDescriptorCompatible checks, message by message and field by field,
// that execfarm's prodisco.sandbox.v1 is a wire-compatible superset of
// ProDisco's original proto: same package, service, methods, message
// names, field numbers, types, cardinality, presence and oneofs; every
// extra execfarm field numbered from 100 up.
func TestDescriptorCompatible(t *testing.T) {
	pd := prodiscoDescriptor(t)
	ef := sandboxv1.File_prodisco_sandbox_v1_sandbox_proto

	if pd.GetPackage() != string(ef.Package()) {
		t.Fatalf("package = %q, execfarm serves %q", pd.GetPackage(), ef.Package())
	}
	pkg := pd.GetPackage() + "."

	if len(pd.GetService()) != 1 || len(pd.GetMessageType()) == 0 || len(pd.GetEnumType()) == 0 {
		t.Fatalf("proto-loader descriptor has %d services, %d messages, %d enums: prodisco_sandbox.proto not loaded as expected",
			len(pd.GetService()), len(pd.GetMessageType()), len(pd.GetEnumType()))
	}
	for _, sp := range pd.GetService() {
		t.Run("service "+sp.GetName(), func(t *testing.T) {
			sd := ef.Services().ByName(protoreflect.Name(sp.GetName()))
			if sd == nil {
				t.Fatalf("execfarm has no service %s", sp.GetName())
			}
			for _, mp := range sp.GetMethod() {
				md := sd.Methods().ByName(protoreflect.Name(mp.GetName()))
				if md == nil {
					t.Errorf("execfarm has no method %s/%s", sp.GetName(), mp.GetName())
					continue
				}
				if got, want := string(md.Input().FullName()), qualify(pd.GetPackage(), mp.GetInputType()); got != want {
					t.Errorf("%s input = %s, ProDisco %s", mp.GetName(), got, want)
				}
				if got, want := string(md.Output().FullName()), qualify(pd.GetPackage(), mp.GetOutputType()); got != want {
					t.Errorf("%s output = %s, ProDisco %s", mp.GetName(), got, want)
				}
				if md.IsStreamingClient() != mp.GetClientStreaming() || md.IsStreamingServer() != mp.GetServerStreaming() {
					t.Errorf("%s streaming = client %v server %v, ProDisco client %v server %v", mp.GetName(),
						md.IsStreamingClient(), md.IsStreamingServer(), mp.GetClientStreaming(), mp.GetServerStreaming())
				}
			}
		})
	}

	for _, mp := range pd.GetMessageType() {
		t.Run("message "+mp.GetName(), func(t *testing.T) {
			md := ef.Messages().ByName(protoreflect.Name(mp.GetName()))
			if md == nil {
				t.Fatalf("execfarm has no message %s%s", pkg, mp.GetName())
			}
			compareMessage(t, pd.GetPackage(), mp, md)
		})
	}

	for _, ep := range pd.GetEnumType() {
		t.Run("enum "+ep.GetName(), func(t *testing.T) {
			ed := ef.Enums().ByName(protoreflect.Name(ep.GetName()))
			if ed == nil {
				t.Fatalf("execfarm has no enum %s%s", pkg, ep.GetName())
			}
			for _, vp := range ep.GetValue() {
				vd := ed.Values().ByName(protoreflect.Name(vp.GetName()))
				if vd == nil {
					t.Errorf("execfarm has no value %s", vp.GetName())
					continue
				}
				if int32(vd.Number()) != vp.GetNumber() {
					t.Errorf("%s = %d, ProDisco %d", vp.GetName(), vd.Number(), vp.GetNumber())
				}
			}
		})
	}
}

// compareMessage checks one ProDisco message against execfarm's.
func compareMessage(t *testing.T, pkg string, mp *descriptorpb.DescriptorProto, md protoreflect.MessageDescriptor) {
	if len(mp.GetNestedType()) != 0 || len(mp.GetEnumType()) != 0 {
		t.Fatalf("nested types in ProDisco's %s are not compared", mp.GetName())
	}
	seen := map[protoreflect.FieldNumber]bool{}
	for _, fp := range mp.GetField() {
		num := protoreflect.FieldNumber(fp.GetNumber())
		seen[num] = true
		fd := md.Fields().ByNumber(num)
		if fd == nil {
			t.Errorf("field %s = %d: execfarm has no field %d", fp.GetName(), num, num)
			continue
		}
		if string(fd.Name()) != fp.GetName() {
			t.Errorf("field %d is %q, ProDisco %q", num, fd.Name(), fp.GetName())
		}
		if got, want := descriptorpb.FieldDescriptorProto_Type(fd.Kind()), fp.GetType(); got != want {
			t.Errorf("field %s type = %v, ProDisco %v", fp.GetName(), got, want)
		}
		if got, want := fd.Cardinality() == protoreflect.Repeated, fp.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED; got != want {
			t.Errorf("field %s repeated = %v, ProDisco %v", fp.GetName(), got, want)
		}
		if want := qualify(pkg, fp.GetTypeName()); want != "" {
			var got string
			switch {
			case fd.Message() != nil:
				got = string(fd.Message().FullName())
			case fd.Enum() != nil:
				got = string(fd.Enum().FullName())
			}
			if got != want {
				t.Errorf("field %s type name = %s, ProDisco %s", fp.GetName(), got, want)
			}
		}
		wantOneof, wantPresence := oneofOf(mp, fp)
		var gotOneof string
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			gotOneof = string(od.Name())
		}
		if gotOneof != wantOneof {
			t.Errorf("field %s oneof = %q, ProDisco %q", fp.GetName(), gotOneof, wantOneof)
		}
		if fd.HasPresence() != wantPresence {
			t.Errorf("field %s has presence = %v, ProDisco %v", fp.GetName(), fd.HasPresence(), wantPresence)
		}
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !seen[fd.Number()] && fd.Number() < firstExtensionField {
			t.Errorf("execfarm field %s = %d is not ProDisco's and below %d", fd.Name(), fd.Number(), firstExtensionField)
		}
	}
}

// oneofOf returns the real oneof a ProDisco field belongs to ("" for none)
// and whether the field tracks presence. protobufjs writes a proto3
// `optional` field as a one-field oneof named "_<field>" and may leave
// proto3_optional unset, so that shape counts as presence, not a oneof.
func oneofOf(mp *descriptorpb.DescriptorProto, fp *descriptorpb.FieldDescriptorProto) (oneof string, presence bool) {
	presence = fp.GetType() == descriptorpb.FieldDescriptorProto_TYPE_MESSAGE &&
		fp.GetLabel() != descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	if fp.OneofIndex == nil {
		return "", presence
	}
	name := mp.GetOneofDecl()[fp.GetOneofIndex()].GetName()
	members := 0
	for _, f := range mp.GetField() {
		if f.OneofIndex != nil && f.GetOneofIndex() == fp.GetOneofIndex() {
			members++
		}
	}
	if fp.GetProto3Optional() || (members == 1 && name == "_"+fp.GetName()) {
		return "", true
	}
	return name, true
}

// qualify returns the full name of a type reference: protobufjs writes
// references within the file's package unqualified ("CacheEntry"),
// protoc fully qualified (".prodisco.sandbox.v1.CacheEntry"). Every type
// of this proto is top-level in pkg, so no other scope can match.
func qualify(pkg, ref string) string {
	switch {
	case ref == "":
		return ""
	case strings.HasPrefix(ref, "."):
		return ref[1:]
	case strings.HasPrefix(ref, pkg+"."):
		return ref
	default:
		return pkg + "." + ref
	}
}
