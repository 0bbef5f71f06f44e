package mcpbridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/runtime/program"
	"github.com/execfarm/execfarm/supervisor/limits"
)

// The tools of the Kubernetes agent-sandbox MCP server
// (kubernetes-sigs/agent-sandbox), with its names, arguments, defaults
// and result fields, over execfarm's
// session sandboxes (execfarm.v1.SessionService). Differences, each
// said in the tool's description:
//
//   - sandbox_claim_name is the session sandbox's id.
//   - warmpool names a sandbox profile of the server (package profile;
//     "" = "default"); no sandbox is started ahead for it.
//   - namespace is accepted and ignored: a session sandbox lives in no
//     Kubernetes namespace, and is found by its id among the caller's
//     own, so no value reaches another's. pod_labels and
//     pod_annotations are accepted and ignored likewise (no pod).
//   - Files move through one MCP message each, at most MaxFileBytes;
//     larger ones go through the gRPC file API.
const (
	CreateSandboxTool    = "create_sandbox"
	DeleteSandboxTool    = "delete_sandbox"
	ExecuteCommandTool   = "execute_command"
	UploadFileTool       = "upload_file"
	DownloadFileTool     = "download_file"
	ListFilesTool        = "list_files"
	FileExistsTool       = "file_exists"
	GetSandboxStatusTool = "get_sandbox_status"
	// SandboxesResource is the get_sandboxes resource's name; its URI is
	// SandboxesURI.
	SandboxesResource = "get_sandboxes"
	SandboxesURI      = "execfarm://sandboxes"
)

// Defaults and bounds of the session tools, from agent-sandbox's MCP
// server where it gives them.
const (
	// DefaultReadyTimeoutSeconds bounds create_sandbox's wait
	// (sandbox_ready_timeout).
	DefaultReadyTimeoutSeconds = 180
	// DefaultCommandTimeoutSeconds is execute_command's timeout, and the
	// file tools' timeout.
	DefaultCommandTimeoutSeconds = 60
	// DefaultListEntries and MaxListEntries bound list_files'
	// max_entries.
	DefaultListEntries = 1000
	MaxListEntries     = 10000
	// MaxFileBytes bounds the content of upload_file and download_file,
	// bytes (decoded): one MCP message carries a file. Its base64 form
	// (4/3 as many bytes) fits an MCP request over HTTP (MaxMessageBytes)
	// and a result (MaxResultBytes). Larger files go through
	// execfarm.v1.SessionService's streamed UploadFile and DownloadFile
	// (`execfarm cp`).
	MaxFileBytes = 1 << 20
	// MaxResultBytes bounds the JSON of a session tool's structured
	// result, bytes; a larger one is a tool error that says how to narrow
	// it (a huge listing of long names, text that JSON escapes six-fold).
	// The result's text content repeats it.
	MaxResultBytes = 4 << 20
	// uploadChunk is the size of an upload's data messages, bytes (the
	// supervisor takes up to 1 MiB).
	uploadChunk = 256 << 10
	// callGrace is how long a call waits past a command's own timeout
	// for its result (the supervisor kills it at the timeout).
	callGrace = 30 * time.Second
)

// largeFiles says where files beyond MaxFileBytes go.
const largeFiles = "move larger files with execfarm's gRPC file API (execfarm.v1.SessionService UploadFile/DownloadFile, e.g. `execfarm cp`)"

// CreateSandboxInput is create_sandbox's input.
type CreateSandboxInput struct {
	Warmpool             string            `json:"warmpool,omitempty" jsonschema:"the sandbox profile to create it from (the server's named runtime, limits and lifetime defaults); empty = the profile default"`
	Namespace            string            `json:"namespace,omitempty" jsonschema:"accepted for compatibility and ignored: execfarm sandboxes live in no Kubernetes namespace"`
	SandboxReadyTimeout  int64             `json:"sandbox_ready_timeout,omitempty" jsonschema:"seconds to wait for the sandbox to be ready (default 180)"`
	Labels               map[string]string `json:"labels,omitempty" jsonschema:"labels of the sandbox, shown by get_sandboxes: at most 32, keys 1-63 characters of letters, digits and ._/-, values at most 255 bytes"`
	ShutdownAfterSeconds *int64            `json:"shutdown_after_seconds,omitempty" jsonschema:"lifetime in seconds, after which the sandbox is deleted, within the server's ceiling (24 h by default); absent: the warmpool's lifetime, else the server's default (300 unless configured); null: no timeout, where the server has no lifetime ceiling (--sandbox-max-lifetime 0), else refused naming the ceiling"`
	PodLabels            map[string]string `json:"pod_labels,omitempty" jsonschema:"accepted for compatibility and ignored: there is no pod"`
	PodAnnotations       map[string]string `json:"pod_annotations,omitempty" jsonschema:"accepted for compatibility and ignored: there is no pod"`
}

// CreateSandboxOutput is create_sandbox's result; its text content is the
// sandbox_claim_name alone.
type CreateSandboxOutput struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Warmpool         string `json:"warmpool"`
	// ExpiresAt is when its lifetime ends, POSIX seconds; absent = never.
	ExpiresAt float64 `json:"expires_at,omitempty"`
}

// SandboxRef names a sandbox: the input of delete_sandbox and
// get_sandbox_status.
type SandboxRef struct {
	SandboxClaimName string `json:"sandbox_claim_name" jsonschema:"the sandbox's id, as create_sandbox returned it"`
	Namespace        string `json:"namespace,omitempty" jsonschema:"accepted for compatibility and ignored: execfarm sandboxes live in no Kubernetes namespace"`
}

// DeleteSandboxOutput is delete_sandbox's result.
type DeleteSandboxOutput struct {
	SandboxClaimName string `json:"sandbox_claim_name"`
	Deleted          bool   `json:"deleted"`
	// CancelledExecs counts the commands that were running and were
	// cancelled.
	CancelledExecs int32 `json:"cancelled_execs"`
}

// ExecuteCommandInput is execute_command's input.
type ExecuteCommandInput struct {
	SandboxClaimName string `json:"sandbox_claim_name" jsonschema:"the sandbox's id"`
	Namespace        string `json:"namespace,omitempty" jsonschema:"accepted for compatibility and ignored"`
	Command          string `json:"command" jsonschema:"a shell command line, run as /bin/sh -c COMMAND in /workspace (files and the working directory persist between commands)"`
	Timeout          int64  `json:"timeout,omitempty" jsonschema:"seconds before the command and everything it started are killed (default 60, at most the server's ceiling, 600 by default)"`
	MaxOutputChars   int    `json:"max_output_chars,omitempty" jsonschema:"characters of stdout and stderr together in the result (default 30000, 128 to 300000), omission markers included"`
}

// ExecuteCommandOutput is execute_command's result.
type ExecuteCommandOutput struct {
	// ExitCode is the command's exit status; 128+N when a signal N ended
	// it, 124 when its timeout did (as timeout(1) reports).
	ExitCode         int32  `json:"exit_code"`
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	StdoutTotalChars int    `json:"stdout_total_chars"`
	StderrTotalChars int    `json:"stderr_total_chars"`
	StdoutTruncated  bool   `json:"stdout_truncated"`
	StderrTruncated  bool   `json:"stderr_truncated"`
	// TerminationReason is why it ended: exited, timeout, cpu_time,
	// memory, pids, output_limit, cancelled, signal, internal.
	TerminationReason string `json:"termination_reason"`
	ExecutionID       string `json:"execution_id"`
}

// UploadFileInput is upload_file's input.
type UploadFileInput struct {
	SandboxClaimName string `json:"sandbox_claim_name" jsonschema:"the sandbox's id"`
	Namespace        string `json:"namespace,omitempty" jsonschema:"accepted for compatibility and ignored"`
	Path             string `json:"path" jsonschema:"where to write: absolute, or relative to /workspace; parent directories are created"`
	Content          string `json:"content" jsonschema:"the file's content: text, or base64 when binary is true; at most 1 MiB (decoded)"`
	Binary           bool   `json:"binary,omitempty" jsonschema:"content is base64 (default false)"`
	Timeout          int64  `json:"timeout,omitempty" jsonschema:"seconds (default 60)"`
}

// UploadFileOutput is upload_file's result; its text content is the
// number of bytes written.
type UploadFileOutput struct {
	BytesWritten int64  `json:"bytes_written"`
	Path         string `json:"path"`
}

// DownloadFileInput is download_file's input.
type DownloadFileInput struct {
	SandboxClaimName string `json:"sandbox_claim_name" jsonschema:"the sandbox's id"`
	Namespace        string `json:"namespace,omitempty" jsonschema:"accepted for compatibility and ignored"`
	Path             string `json:"path" jsonschema:"the file: absolute, or relative to /workspace"`
	Binary           bool   `json:"binary,omitempty" jsonschema:"return the content as base64 (default false: as text, which must be UTF-8)"`
	Timeout          int64  `json:"timeout,omitempty" jsonschema:"seconds (default 60)"`
}

// DownloadFileOutput is download_file's result.
type DownloadFileOutput struct {
	Content   string `json:"content"`
	BytesRead int64  `json:"bytes_read"`
	Binary    bool   `json:"binary"`
	Path      string `json:"path"`
}

// ListFilesInput is list_files' input.
type ListFilesInput struct {
	SandboxClaimName string `json:"sandbox_claim_name" jsonschema:"the sandbox's id"`
	Namespace        string `json:"namespace,omitempty" jsonschema:"accepted for compatibility and ignored"`
	Path             string `json:"path" jsonschema:"the directory: absolute, or relative to /workspace"`
	Timeout          int64  `json:"timeout,omitempty" jsonschema:"seconds (default 60)"`
	MaxEntries       int    `json:"max_entries,omitempty" jsonschema:"at most this many entries, by name (default 1000, at most 10000)"`
}

// FileEntry is one entry of list_files.
type FileEntry struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// Type is file, directory, symlink (never followed) or other (a FIFO,
	// socket or device).
	Type string `json:"type"`
	// ModTime is the modification time, POSIX seconds.
	ModTime float64 `json:"mod_time"`
	// NotUTF8 says the name held bytes that are not UTF-8: each run of
	// them is one U+FFFD in Name, which is not the real name.
	NotUTF8 bool `json:"not_utf8,omitempty"`
}

// ListFilesOutput is list_files' result.
type ListFilesOutput struct {
	Path    string      `json:"path"`
	Entries []FileEntry `json:"entries"`
	// TotalEntries counts the directory's entries before max_entries and
	// the server's 3 MiB bound on a response; Truncated says either cut
	// Entries (it holds fewer than TotalEntries).
	TotalEntries int64 `json:"total_entries"`
	Truncated    bool  `json:"truncated"`
}

// FileExistsInput is file_exists' input.
type FileExistsInput struct {
	SandboxClaimName string `json:"sandbox_claim_name" jsonschema:"the sandbox's id"`
	Namespace        string `json:"namespace,omitempty" jsonschema:"accepted for compatibility and ignored"`
	Path             string `json:"path" jsonschema:"absolute, or relative to /workspace"`
	Timeout          int64  `json:"timeout,omitempty" jsonschema:"seconds (default 60)"`
}

// FileExistsOutput is file_exists' result.
type FileExistsOutput struct {
	Exists bool `json:"exists"`
	// Type is what the path is when it exists (as FileEntry's).
	Type string `json:"type,omitempty"`
}

// SandboxStatusOutput is get_sandbox_status' result.
type SandboxStatusOutput struct {
	// Status is SandboxReady, SandboxNotReady or SandboxNotFound.
	Status  string `json:"status"`
	Ready   bool   `json:"ready"`
	Message string `json:"message"`
}

// SandboxListEntry is one sandbox of the get_sandboxes resource.
type SandboxListEntry struct {
	SandboxClaimName string            `json:"sandbox_claim_name"`
	Status           string            `json:"status"`
	Ready            bool              `json:"ready"`
	Message          string            `json:"message"`
	Warmpool         string            `json:"warmpool"`
	Labels           map[string]string `json:"labels,omitempty"`
	// CreatedAt and ExpiresAt are POSIX seconds; ExpiresAt absent =
	// never.
	CreatedAt    float64 `json:"created_at"`
	ExpiresAt    float64 `json:"expires_at,omitempty"`
	RunningExecs int32   `json:"running_execs"`
}

// sessionTools serves the session tools with a SessionService client.
type sessionTools struct {
	client execfarmv1.SessionServiceClient
}

// withSchema returns In's inferred schema adjusted by adjust.
func withSchema[In any](adjust func(p map[string]*jsonschema.Schema, s *jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpbridge: schema of %T: %v", *new(In), err)) // the types are this file's
	}
	adjust(s.Properties, s)
	return s
}

func defaultOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// timeoutProp bounds a timeout argument in seconds with its default.
func timeoutProp(p *jsonschema.Schema, def int) {
	p.Minimum, p.Default = ptr(1.0), defaultOf(def)
}

// addSessionTools adds the session tools and the get_sandboxes resource
// to s, and their integer arguments to ints.
func addSessionTools(s *mcp.Server, client execfarmv1.SessionServiceClient, ints toolInts) {
	st := &sessionTools{client: client}
	addTool(s, ints, &mcp.Tool{
		Name: CreateSandboxTool,
		Description: "Create an isolated sandbox (its own namespaces, cgroup, seccomp filter and read-only root; a writable /workspace that persists between commands) from a sandbox profile (warmpool), and return its sandbox_claim_name. " +
			"It lives shutdown_after_seconds (absent: the warmpool's lifetime, else 300; null: no timeout, where the server allows it) unless deleted first, and belongs to this MCP client alone: no other client can see or use it, and when this client's session ends (a stdio client exits) it is deleted. " +
			"namespace, pod_labels and pod_annotations are accepted and ignored.",
		InputSchema: withSchema[CreateSandboxInput](func(p map[string]*jsonschema.Schema, _ *jsonschema.Schema) {
			timeoutProp(p["sandbox_ready_timeout"], DefaultReadyTimeoutSeconds)
			// The seed's default, declared; the SDK fills it in for an
			// absent field, which the handler still takes as absent
			// (lifetimeArg): the profile's lifetime, else
			// --sandbox-default-lifetime (300 s). null: no timeout.
			p["shutdown_after_seconds"].Default = defaultOf(300)
			p["shutdown_after_seconds"].Type, p["shutdown_after_seconds"].Types = "", []string{"integer", "null"}
			p["shutdown_after_seconds"].Minimum = ptr(1.0)
		}),
	}, st.create)
	addTool(s, ints, &mcp.Tool{
		Name:        DeleteSandboxTool,
		Description: "Delete one of your sandboxes: every command still running in it is killed and everything in it is destroyed. A sandbox that is not yours, or is gone, is NOT_FOUND. namespace is ignored.",
		InputSchema: withSchema[SandboxRef](func(map[string]*jsonschema.Schema, *jsonschema.Schema) {}),
	}, st.delete)
	addTool(s, ints, &mcp.Tool{
		Name: ExecuteCommandTool,
		Description: "Run a shell command (/bin/sh -c) in one of your sandboxes, in /workspace, and return exit_code, stdout and stderr. timeout (default 60 s) kills the command and everything it started. " +
			"Output is cut to max_output_chars characters (default 30000, 128 to 300000) of stdout and stderr together: half each at first, a stream that needs less leaves the rest to the other, and an oversized stream keeps its beginning and end around \"[... N characters omitted ...]\". " +
			"stdout_total_chars/stderr_total_chars count the output before cutting, stdout_truncated/stderr_truncated say whether anything was omitted; the command is never rerun. The sandbox also keeps at most its output limit per stream (1 MiB by default); beyond it the middle is dropped. namespace is ignored.",
		InputSchema: withSchema[ExecuteCommandInput](func(p map[string]*jsonschema.Schema, _ *jsonschema.Schema) {
			timeoutProp(p["timeout"], DefaultCommandTimeoutSeconds)
			p["max_output_chars"].Minimum, p["max_output_chars"].Maximum = ptr(float64(MinOutputChars)), ptr(float64(MaxOutputChars))
			p["max_output_chars"].Default = defaultOf(DefaultOutputChars)
		}),
	}, st.execute)
	addTool(s, ints, &mcp.Tool{
		Name: UploadFileTool,
		Description: fmt.Sprintf("Write a file in one of your sandboxes (parent directories are created) from text, or from base64 with binary true; returns the number of bytes written. "+
			"At most %d bytes (1 MiB) a file: %s. namespace is ignored.", MaxFileBytes, largeFiles),
		InputSchema: withSchema[UploadFileInput](func(p map[string]*jsonschema.Schema, _ *jsonschema.Schema) {
			timeoutProp(p["timeout"], DefaultCommandTimeoutSeconds)
			p["binary"].Default = defaultOf(false)
		}),
	}, st.upload)
	addTool(s, ints, &mcp.Tool{
		Name: DownloadFileTool,
		Description: fmt.Sprintf("Read a file of one of your sandboxes: its content as text (UTF-8), or as base64 with binary true, and the number of bytes read. "+
			"At most %d bytes (1 MiB) a file: %s. namespace is ignored.", MaxFileBytes, largeFiles),
		InputSchema: withSchema[DownloadFileInput](func(p map[string]*jsonschema.Schema, _ *jsonschema.Schema) {
			timeoutProp(p["timeout"], DefaultCommandTimeoutSeconds)
			p["binary"].Default = defaultOf(false)
		}),
	}, st.download)
	addTool(s, ints, &mcp.Tool{
		Name: ListFilesTool,
		Description: "List a directory of one of your sandboxes: entries (name, size, type file/directory/symlink/other, mod_time in POSIX seconds) sorted by name, at most max_entries (default 1000, at most 10000) and at most 3 MiB of them, with total_entries counting them all and truncated when some were left out; " +
			"a name that is not UTF-8 has U+FFFD for each run of its invalid bytes and not_utf8 true (not the real name); " +
			"then narrow the path, or use execute_command for a targeted listing. namespace is ignored.",
		InputSchema: withSchema[ListFilesInput](func(p map[string]*jsonschema.Schema, _ *jsonschema.Schema) {
			timeoutProp(p["timeout"], DefaultCommandTimeoutSeconds)
			p["max_entries"].Minimum, p["max_entries"].Maximum = ptr(1.0), ptr(float64(MaxListEntries))
			p["max_entries"].Default = defaultOf(DefaultListEntries)
		}),
	}, st.list)
	addTool(s, ints, &mcp.Tool{
		Name:        FileExistsTool,
		Description: "Check whether a file or directory exists in one of your sandboxes (symlinks are not followed): exists, and its type when it does. A missing path is exists false, not an error. namespace is ignored.",
		InputSchema: withSchema[FileExistsInput](func(p map[string]*jsonschema.Schema, _ *jsonschema.Schema) {
			timeoutProp(p["timeout"], DefaultCommandTimeoutSeconds)
		}),
	}, st.exists)
	addTool(s, ints, &mcp.Tool{
		Name:        GetSandboxStatusTool,
		Description: "Report a sandbox's readiness: status SandboxReady, SandboxNotReady (being deleted or expiring, or its worker was lost; message says which) or SandboxNotFound (never created, gone, or not yours), ready, and message. namespace is ignored.",
		InputSchema: withSchema[SandboxRef](func(map[string]*jsonschema.Schema, *jsonschema.Schema) {}),
	}, st.status)
	s.AddResource(&mcp.Resource{
		Name:        SandboxesResource,
		URI:         SandboxesURI,
		MIMEType:    "application/json",
		Description: "Your sandboxes (this MCP client's only), oldest first, as a JSON array of {sandbox_claim_name, status, ready, message, warmpool, labels, created_at, expires_at, running_execs}.",
	}, st.sandboxes)
}

// addTool adds a session tool whose handler returns its result and,
// unless "", the result's text content (else the SDK's JSON of it). A
// handler's gRPC error becomes a tool error starting with its code
// (wireError); a result whose JSON is over MaxResultBytes becomes one.
func addTool[In, Out any](s *mcp.Server, ints toolInts, t *mcp.Tool, h func(context.Context, In) (Out, string, error)) {
	ints.add(t)
	mcp.AddTool(s, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		out, text, err := h(ctx, in)
		if err != nil {
			return nil, zero, wireError(err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, zero, err
		}
		if len(b) > MaxResultBytes {
			return nil, zero, wireError(status.Errorf(codes.FailedPrecondition,
				"the result is %d bytes of JSON; a tool result is at most %d: ask for less (fewer entries, a narrower path, binary content)", len(b), MaxResultBytes))
		}
		if text == "" {
			return nil, out, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
}

// withSeconds returns a call's context bounded by n seconds (0 = def).
func withSeconds(ctx context.Context, n, def int64) (context.Context, context.CancelFunc) {
	if n <= 0 {
		n = def
	}
	return context.WithTimeout(ctx, limits.Seconds(n))
}

func sandboxRequired(id string) error {
	if strings.TrimSpace(id) == "" {
		return invalid("sandbox_claim_name is required")
	}
	return nil
}

func posix(ms int64) float64 { return float64(ms) / 1000 }

func (st *sessionTools) create(ctx context.Context, in CreateSandboxInput) (CreateSandboxOutput, string, error) {
	ctx, cancel := withSeconds(ctx, in.SandboxReadyTimeout, DefaultReadyTimeoutSeconds)
	defer cancel()
	// Absent (though the SDK filled in the schema's default): the
	// server's default, the profile's lifetime else 300 s. null: 0, no
	// expiry, which the supervisor refuses under a lifetime ceiling,
	// naming it.
	req := &execfarmv1.CreateSandboxRequest{Profile: in.Warmpool, Labels: in.Labels, ShutdownAfterSeconds: in.ShutdownAfterSeconds}
	switch lifetimeOf(ctx) {
	case lifetimeAbsent:
		req.ShutdownAfterSeconds = nil
	case lifetimeNull:
		req.ShutdownAfterSeconds = ptr(int64(0))
	}
	sb, err := st.client.CreateSandbox(ctx, req)
	if err != nil {
		return CreateSandboxOutput{}, "", err
	}
	out := CreateSandboxOutput{SandboxClaimName: sb.GetSandboxId(), Warmpool: sb.GetProfile(), ExpiresAt: posix(sb.GetExpiresAtMs())}
	return out, out.SandboxClaimName, nil
}

func (st *sessionTools) delete(ctx context.Context, in SandboxRef) (DeleteSandboxOutput, string, error) {
	if err := sandboxRequired(in.SandboxClaimName); err != nil {
		return DeleteSandboxOutput{}, "", err
	}
	resp, err := st.client.DeleteSandbox(ctx, &execfarmv1.DeleteSandboxRequest{SandboxId: in.SandboxClaimName})
	if err != nil {
		return DeleteSandboxOutput{}, "", err
	}
	return DeleteSandboxOutput{SandboxClaimName: in.SandboxClaimName, Deleted: true, CancelledExecs: resp.GetCancelledExecs()}, "", nil
}

// execute runs the command with the streamed Exec (closing the call
// cancels it), reading each stream into a Capture of the call's budget:
// the bridge holds at most twice the budget per stream, whatever the
// command writes.
func (st *sessionTools) execute(ctx context.Context, in ExecuteCommandInput) (ExecuteCommandOutput, string, error) {
	if err := sandboxRequired(in.SandboxClaimName); err != nil {
		return ExecuteCommandOutput{}, "", err
	}
	if strings.TrimSpace(in.Command) == "" {
		return ExecuteCommandOutput{}, "", invalid("command is required")
	}
	// /bin/sh -c takes the command as one argument: one with a NUL byte
	// could not start, one past MAX_ARG_STRLEN neither.
	if err := program.CheckArg("command", in.Command); err != nil {
		return ExecuteCommandOutput{}, "", invalid("%s", err)
	}
	secs := in.Timeout
	if secs <= 0 {
		secs = DefaultCommandTimeoutSeconds
	}
	budget := in.MaxOutputChars
	if budget == 0 {
		budget = DefaultOutputChars
	}
	budget = min(max(budget, MinOutputChars), MaxOutputChars)
	ctx, cancel := context.WithTimeout(ctx, min(limits.Seconds(secs), math.MaxInt64-callGrace)+callGrace)
	defer cancel() // the supervisor cancels the exec if we stop reading
	timeoutMs := limits.SecondsToMillis(secs)
	stream, err := st.client.Exec(ctx, &execfarmv1.ExecRequest{SandboxId: in.SandboxClaimName, Code: in.Command,
		Runtime: sandboxv1.Runtime_RUNTIME_SHELL, TimeoutMs: &timeoutMs})
	if err != nil {
		return ExecuteCommandOutput{}, "", err
	}
	stdout, stderr := NewCapture(budget), NewCapture(budget)
	// Offsets past what was received are bytes the sandbox's output
	// limit dropped: a gap in the Capture, counted in the totals and the
	// marker (Capture.Skip).
	var offOut, offErr int64
	var out ExecuteCommandOutput
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return ExecuteCommandOutput{}, "", status.Error(codes.Unavailable, "the exec stream ended without a result")
		}
		if err != nil {
			return ExecuteCommandOutput{}, "", err
		}
		out.ExecutionID = chunk.GetExecutionId()
		switch c := chunk.GetChunk().(type) {
		case *execfarmv1.ExecChunk_Stdout:
			stdout.SkipTo(&offOut, chunk.GetStreamOffset())
			_, _ = stdout.Write(c.Stdout)
			offOut += int64(len(c.Stdout))
		case *execfarmv1.ExecChunk_Stderr:
			stderr.SkipTo(&offErr, chunk.GetStreamOffset())
			_, _ = stderr.Write(c.Stderr)
			offErr += int64(len(c.Stderr))
		case *execfarmv1.ExecChunk_Result:
			o := c.Result.GetOutcome()
			stdout.SkipTo(&offOut, o.GetStdoutBytes())
			stderr.SkipTo(&offErr, o.GetStderrBytes())
			stdout.Close()
			stderr.Close()
			bo, be := BudgetCaptures(stdout, stderr, budget)
			out.Stdout, out.StdoutTotalChars, out.StdoutTruncated = bo.Text, bo.TotalChars, bo.Truncated || o.GetStdoutTruncated()
			out.Stderr, out.StderrTotalChars, out.StderrTruncated = be.Text, be.TotalChars, be.Truncated || o.GetStderrTruncated()
			out.TerminationReason = o.GetTerminationReason().Name()
			out.ExitCode = exitCode(o)
			return out, "", nil
		}
	}
}

// exitCode is a shell's view of how the command ended: its exit status,
// 128+N for a signal N, 124 for its timeout (timeout(1)'s).
func exitCode(o *sandboxv1.ExecutionOutcome) int32 {
	switch {
	case o.GetTerminationReason() == sandboxv1.TerminationReason_TERMINATION_REASON_EXITED:
		return o.GetExitCode()
	case o.GetTerminationReason() == sandboxv1.TerminationReason_TERMINATION_REASON_TIMEOUT:
		return 124
	case o.GetSignal() > 0:
		return 128 + o.GetSignal()
	}
	return 1
}

// decodeBase64 decodes standard base64, padded or not, ignoring line
// breaks and spaces.
func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

func (st *sessionTools) upload(ctx context.Context, in UploadFileInput) (UploadFileOutput, string, error) {
	if err := sandboxRequired(in.SandboxClaimName); err != nil {
		return UploadFileOutput{}, "", err
	}
	if in.Path == "" {
		return UploadFileOutput{}, "", invalid("path is required")
	}
	data := []byte(in.Content)
	if in.Binary {
		// Refused before decoding: base64 of MaxFileBytes, even broken
		// into lines, is well under twice as long.
		if len(in.Content) > 2*MaxFileBytes {
			return UploadFileOutput{}, "", invalid("content is %d bytes of base64, over %d bytes decoded; %s", len(in.Content), MaxFileBytes, largeFiles)
		}
		var err error
		if data, err = decodeBase64(in.Content); err != nil {
			return UploadFileOutput{}, "", invalid("binary is true but content is not base64: %v", err)
		}
	}
	if len(data) > MaxFileBytes {
		return UploadFileOutput{}, "", invalid("content is %d bytes; an MCP upload carries at most %d: %s", len(data), MaxFileBytes, largeFiles)
	}
	ctx, cancel := withSeconds(ctx, in.Timeout, DefaultCommandTimeoutSeconds)
	defer cancel()
	up, err := st.client.UploadFile(ctx)
	if err != nil {
		return UploadFileOutput{}, "", err
	}
	send := func(r *execfarmv1.UploadFileRequest) error {
		if err := up.Send(r); err != nil {
			// The server's reason comes with CloseAndRecv.
			_, rerr := up.CloseAndRecv()
			return cmpErr(rerr, err)
		}
		return nil
	}
	if err := send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Header{Header: &execfarmv1.UploadFileHeader{SandboxId: in.SandboxClaimName, Path: in.Path}}}); err != nil {
		return UploadFileOutput{}, "", err
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), uploadChunk)
		if err := send(&execfarmv1.UploadFileRequest{Part: &execfarmv1.UploadFileRequest_Data{Data: rest[:n]}}); err != nil {
			return UploadFileOutput{}, "", err
		}
		rest = rest[n:]
	}
	resp, err := up.CloseAndRecv()
	if err != nil {
		return UploadFileOutput{}, "", err
	}
	out := UploadFileOutput{BytesWritten: resp.GetBytesWritten(), Path: resp.GetPath()}
	return out, fmt.Sprint(out.BytesWritten), nil
}

// cmpErr returns the first non-nil error that is not io.EOF.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return errs[len(errs)-1]
}

func (st *sessionTools) download(ctx context.Context, in DownloadFileInput) (DownloadFileOutput, string, error) {
	if err := sandboxRequired(in.SandboxClaimName); err != nil {
		return DownloadFileOutput{}, "", err
	}
	if in.Path == "" {
		return DownloadFileOutput{}, "", invalid("path is required")
	}
	ctx, cancel := withSeconds(ctx, in.Timeout, DefaultCommandTimeoutSeconds)
	defer cancel() // stops the download when it is too large
	stream, err := st.client.DownloadFile(ctx, &execfarmv1.DownloadFileRequest{SandboxId: in.SandboxClaimName, Path: in.Path})
	if err != nil {
		return DownloadFileOutput{}, "", err
	}
	tooLarge := func(n int64) error {
		return status.Errorf(codes.FailedPrecondition, "%s is %d bytes; an MCP download carries at most %d: %s", in.Path, n, MaxFileBytes, largeFiles)
	}
	var (
		path string
		data []byte
	)
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return DownloadFileOutput{}, "", err
		}
		switch p := msg.GetPart().(type) {
		case *execfarmv1.DownloadFileResponse_Info:
			path = p.Info.GetPath()
			if p.Info.GetSize() > MaxFileBytes {
				return DownloadFileOutput{}, "", tooLarge(p.Info.GetSize())
			}
		case *execfarmv1.DownloadFileResponse_Data:
			// It may have grown since its size was read.
			if int64(len(data))+int64(len(p.Data)) > MaxFileBytes {
				return DownloadFileOutput{}, "", tooLarge(int64(len(data)) + int64(len(p.Data)))
			}
			data = append(data, p.Data...)
		}
	}
	out := DownloadFileOutput{BytesRead: int64(len(data)), Binary: in.Binary, Path: path}
	if in.Binary {
		out.Content = base64.StdEncoding.EncodeToString(data)
	} else {
		if !utf8.Valid(data) {
			return DownloadFileOutput{}, "", status.Errorf(codes.FailedPrecondition, "%s is not UTF-8 text: download it with binary true (base64)", in.Path)
		}
		out.Content = string(data)
	}
	return out, "", nil
}

// fileType names a FileType as list_files and file_exists show it.
func fileType(t execfarmv1.FileType) string {
	switch t {
	case execfarmv1.FileType_FILE_TYPE_FILE:
		return "file"
	case execfarmv1.FileType_FILE_TYPE_DIRECTORY:
		return "directory"
	case execfarmv1.FileType_FILE_TYPE_SYMLINK:
		return "symlink"
	}
	return "other"
}

func (st *sessionTools) list(ctx context.Context, in ListFilesInput) (ListFilesOutput, string, error) {
	if err := sandboxRequired(in.SandboxClaimName); err != nil {
		return ListFilesOutput{}, "", err
	}
	n := in.MaxEntries
	if n <= 0 {
		n = DefaultListEntries
	}
	if n > MaxListEntries {
		return ListFilesOutput{}, "", invalid("max_entries %d: at most %d", n, MaxListEntries)
	}
	ctx, cancel := withSeconds(ctx, in.Timeout, DefaultCommandTimeoutSeconds)
	defer cancel()
	resp, err := st.client.ListFiles(ctx, &execfarmv1.ListFilesRequest{SandboxId: in.SandboxClaimName, Path: in.Path, MaxEntries: int32(n)})
	if err != nil {
		return ListFilesOutput{}, "", err
	}
	out := ListFilesOutput{Path: resp.GetPath(), Entries: make([]FileEntry, 0, len(resp.GetEntries())), TotalEntries: resp.GetTotalEntries(), Truncated: resp.GetTruncated()}
	for _, e := range resp.GetEntries() {
		out.Entries = append(out.Entries, FileEntry{Name: e.GetName(), Size: e.GetSize(), Type: fileType(e.GetType()), ModTime: posix(e.GetModTimeMs()), NotUTF8: e.GetNotUtf8()})
	}
	return out, "", nil
}

func (st *sessionTools) exists(ctx context.Context, in FileExistsInput) (FileExistsOutput, string, error) {
	if err := sandboxRequired(in.SandboxClaimName); err != nil {
		return FileExistsOutput{}, "", err
	}
	if in.Path == "" {
		return FileExistsOutput{}, "", invalid("path is required")
	}
	ctx, cancel := withSeconds(ctx, in.Timeout, DefaultCommandTimeoutSeconds)
	defer cancel()
	resp, err := st.client.StatFile(ctx, &execfarmv1.StatFileRequest{SandboxId: in.SandboxClaimName, Path: in.Path})
	if err != nil {
		return FileExistsOutput{}, "", err
	}
	out := FileExistsOutput{Exists: resp.GetExists()}
	if out.Exists {
		out.Type = fileType(resp.GetInfo().GetType())
	}
	return out, "", nil
}

// statusName is agent-sandbox's name of a sandbox state.
func statusName(s execfarmv1.SandboxState) string {
	switch s {
	case execfarmv1.SandboxState_SANDBOX_STATE_READY:
		return "SandboxReady"
	case execfarmv1.SandboxState_SANDBOX_STATE_NOT_READY:
		return "SandboxNotReady"
	}
	return "SandboxNotFound"
}

func (st *sessionTools) status(ctx context.Context, in SandboxRef) (SandboxStatusOutput, string, error) {
	if err := sandboxRequired(in.SandboxClaimName); err != nil {
		return SandboxStatusOutput{}, "", err
	}
	sb, err := st.client.GetSandbox(ctx, &execfarmv1.GetSandboxRequest{SandboxId: in.SandboxClaimName})
	if err != nil {
		return SandboxStatusOutput{}, "", err
	}
	return SandboxStatusOutput{Status: statusName(sb.GetState()), Ready: sb.GetReady(), Message: sb.GetMessage()}, "", nil
}

// sandboxes reads the get_sandboxes resource: the caller's sandboxes.
func (st *sessionTools) sandboxes(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	resp, err := st.client.ListSandboxes(ctx, &execfarmv1.ListSandboxesRequest{})
	if err != nil {
		return nil, wireError(err)
	}
	list := make([]SandboxListEntry, 0, len(resp.GetSandboxes()))
	for _, sb := range resp.GetSandboxes() {
		list = append(list, SandboxListEntry{
			SandboxClaimName: sb.GetSandboxId(), Status: statusName(sb.GetState()), Ready: sb.GetReady(), Message: sb.GetMessage(),
			Warmpool: sb.GetProfile(), Labels: sb.GetLabels(), CreatedAt: posix(sb.GetCreatedAtMs()), ExpiresAt: posix(sb.GetExpiresAtMs()),
			RunningExecs: sb.GetRunningExecs(),
		})
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
}
