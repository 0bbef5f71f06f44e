package supervisor

import (
	"context"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Proto3 strings must be valid UTF-8, and grpc-go refuses a request that
// breaks the rule while decoding it, before any handler or interceptor,
// as INTERNAL ("failed to unmarshal"): a client's bad input reported as
// the server's fault. utf8Codec decodes such a request anyway, with each
// invalid string made valid (U+FFFD) and the first such field's name
// recorded in an unknown field of the message (invalidUTF8Field);
// refuseInvalidUTF8's interceptors then answer INVALID_ARGUMENT naming
// the field, before the handler sees the request.

// invalidUTF8Field is the field number of the marker: the largest a
// message may have, used by none of ours.
const invalidUTF8Field = protowire.MaxValidNumber

// invalidUTF8Error is a request string field that was not valid UTF-8.
type invalidUTF8Error struct{ field string }

func (e *invalidUTF8Error) Error() string {
	return "request field " + e.field + " is not valid UTF-8 (proto3 strings must be; send text as UTF-8)"
}

// utf8Codec is grpc-go's proto codec, lenient with invalid UTF-8 as said.
type utf8Codec struct{ encoding.CodecV2 }

func newUTF8Codec() utf8Codec { return utf8Codec{encoding.GetCodecV2(gproto.Name)} }

func (c utf8Codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	fixed, field, ok := validStrings(data.Materialize(), m.ProtoReflect().Descriptor(), "")
	if !ok || field == "" {
		return err // not a UTF-8 problem
	}
	fixed = protowire.AppendTag(fixed, invalidUTF8Field, protowire.BytesType)
	fixed = protowire.AppendString(fixed, field)
	if uerr := proto.Unmarshal(fixed, m); uerr != nil {
		return err
	}
	return nil
}

// validStrings returns b, a message of type md in wire format, with every
// string field holding invalid UTF-8 made valid, and the path of the
// first such field ("" when there is none); ok is false when b does not
// parse.
func validStrings(b []byte, md protoreflect.MessageDescriptor, prefix string) (out []byte, first string, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, "", false
		}
		fd := md.Fields().ByNumber(num)
		if typ == protowire.BytesType && fd != nil && (fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.MessageKind) {
			v, m := protowire.ConsumeBytes(b[n:])
			if m < 0 {
				return nil, "", false
			}
			name := prefix + string(fd.Name())
			if fd.Kind() == protoreflect.StringKind {
				if !utf8.Valid(v) {
					v = []byte(string([]rune(string(v))))
					if first == "" {
						first = name
					}
				}
			} else {
				inner, f, ok := validStrings(v, fd.Message(), name+".")
				if !ok {
					return nil, "", false
				}
				if first == "" {
					first = f
				}
				v = inner
			}
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendBytes(out, v)
			b = b[n+m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, "", false
		}
		out = append(out, b[:n+m]...)
		b = b[n+m:]
	}
	return out, first, true
}

// invalidUTF8 returns the error a request decoded by utf8Codec carries, nil
// when it was valid.
func invalidUTF8(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	b := m.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		if num == invalidUTF8Field && typ == protowire.BytesType {
			v, _ := protowire.ConsumeString(b[n:])
			return &invalidUTF8Error{field: v}
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil
		}
		b = b[n+m:]
	}
	return nil
}

// refuseInvalidUTF8 returns the codec and interceptors of the rule above.
func refuseInvalidUTF8() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(newUTF8Codec()),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := invalidUTF8(req); err != nil {
				return nil, rpcError(err)
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, utf8Stream{ss})
		}),
	}
}

// utf8Stream refuses a received message that was not valid UTF-8.
type utf8Stream struct{ grpc.ServerStream }

func (s utf8Stream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if err := invalidUTF8(m); err != nil {
		return rpcError(err)
	}
	return nil
}
