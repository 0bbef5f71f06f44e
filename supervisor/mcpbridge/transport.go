package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one inbound JSON-RPC line of Transport, bytes: the
// SDK's own default frame bound, room for MaxCodeBytes of code however
// JSON escapes it.
const MaxLineBytes = mcp.DefaultMaxLineLength

// JSON-RPC 2.0 error codes (https://www.jsonrpc.org/specification#error_object).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// Transport is the MCP transport of `execfarm mcp`: newline-delimited
// JSON-RPC on In and Out, as the SDK's IOTransport speaks it, with every
// inbound line checked before the SDK sees it, so that no line can end or
// hang the session (the SDK's reader gives up on the first malformed
// message, and its JSON decoder reads a truncated message on into the next
// line). A line that is not JSON is answered with a -32700 parse error;
// JSON that is not one JSON-RPC 2.0 message (a batch, an array, a scalar,
// an object as id, a missing method) and a line over MaxLineBytes (read
// and dropped, never buffered whole) with -32600 invalid request; both
// with id null, and the session goes on. Empty lines are skipped.
// Batches are refused: MCP dropped JSON-RPC batching in its 2025-06-18
// revision.
type Transport struct {
	// In is read line by line until EOF, which ends the session.
	In io.ReadCloser
	// Out receives the SDK's messages and the error answers, one line each.
	Out io.Writer
	// MaxLineBytes bounds a line; 0 = MaxLineBytes.
	MaxLineBytes int
}

// Connect starts the line filter and returns the SDK's connection over it.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineBytes
	if limit <= 0 {
		limit = MaxLineBytes
	}
	pr, pw := io.Pipe()
	out := &lineWriter{w: t.Out}
	go filterLines(t.In, pw, out, limit)
	// Lines reach the SDK one at a time and bounded: its own bound (one
	// byte more, for the newline) never trips.
	conn, err := (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: limit + 2}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return codedErrors{conn}, nil
}

// codedErrors gives the SDK's answer to a request before initialize a
// JSON-RPC error code: the SDK answers it with a plain error, which goes
// out as code 0, no code of JSON-RPC's. It is -32600 (invalid request),
// as over HTTP (HTTPHandler).
type codedErrors struct{ mcp.Connection }

func (c codedErrors) Write(ctx context.Context, msg jsonrpc.Message) error {
	return c.Connection.Write(ctx, withErrorCode(msg))
}

// withErrorCode returns msg, or for a response whose error is the SDK's
// plain refusal of a request before initialize, the same response with
// code -32600.
func withErrorCode(msg jsonrpc.Message) jsonrpc.Message {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		return msg
	}
	var coded *jsonrpc.Error
	if errors.As(resp.Error, &coded) || !strings.Contains(resp.Error.Error(), "invalid during session initialization") {
		return msg
	}
	return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: notInitialized + " (" + resp.Error.Error() + ")"}}
}

// lineWriter serialises whole-line writes of the SDK and of the filter's
// error answers. Close does not close the underlying writer (stdout).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// filterLines copies the valid lines of in to pw, answers the others on
// out, and closes pw at the end of in (or when the SDK side has gone).
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer, limit int) {
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 {
				tooLong, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 || len(line) > 0 || tooLong {
			var werr error
			switch {
			case tooLong:
				werr = answerError(out, codeInvalidRequest, fmt.Sprintf("invalid request: line longer than %d bytes", limit))
			default:
				werr = handleLine(line, pw, out)
			}
			if werr != nil {
				pw.CloseWithError(werr)
				return
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			pw.CloseWithError(err) // io.EOF: a normal end
			return
		}
	}
}

// handleLine passes a valid message on to the SDK and answers any other
// non-empty line with the JSON-RPC error it deserves.
func handleLine(line []byte, pw io.Writer, out io.Writer) error {
	msg := bytes.TrimSpace(line)
	if len(msg) == 0 {
		return nil
	}
	if code, why := checkMessage(msg); code != 0 {
		return answerError(out, code, why)
	}
	_, err := pw.Write(append(msg, '\n'))
	return err
}

// checkMessage returns 0 when msg is one JSON-RPC 2.0 message the SDK
// decodes, else the error code and message to answer.
func checkMessage(msg []byte) (code int, why string) {
	if !json.Valid(msg) {
		return codeParseError, "parse error: the line is not valid JSON"
	}
	switch msg[0] {
	case '{':
	case '[':
		return codeInvalidRequest, "invalid request: JSON-RPC batches are not supported"
	default:
		return codeInvalidRequest, "invalid request: not a JSON-RPC message object"
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return codeInvalidRequest, "invalid request: " + err.Error()
	}
	return 0, ""
}

// answerError writes a JSON-RPC error response with id null.
func answerError(out io.Writer, code int, msg string) error {
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg},
	})
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}
