package supervisor

import (
	"time"

	"github.com/execfarm/execfarm/proto/execfarmv1"
	"github.com/execfarm/execfarm/proto/sandboxv1"
	"github.com/execfarm/execfarm/supervisor/eventlog"
	"github.com/execfarm/execfarm/supervisor/registry"
	"github.com/execfarm/execfarm/supervisor/session"
)

// Conversions between the session package's types and execfarm.v1's.
// The session package numbers its end reasons and file types as the wire
// does; these are the one place that relies on it.

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func sandboxToProto(in session.Info) *execfarmv1.Sandbox {
	st := execfarmv1.SandboxState_SANDBOX_STATE_READY
	if !in.Ready {
		st = execfarmv1.SandboxState_SANDBOX_STATE_NOT_READY
	}
	u := in.Usage
	return &execfarmv1.Sandbox{
		SandboxId: in.ID, State: st, Ready: in.Ready, Message: in.Message, Labels: in.Labels,
		Runtime: runtimeToProto(in.Runtime), Limits: in.Limits.ToProto(),
		CreatedAtMs: unixMs(in.Created), ExpiresAtMs: unixMs(in.Expires),
		IdleTimeoutSeconds: int64(in.IdleTimeout / time.Second), LastActivityMs: unixMs(in.LastActivity),
		Usage: &sandboxv1.ResourceUsage{
			CpuUserUs: u.CPUUserMicros, CpuSystemUs: u.CPUSystemMicros, PeakMemoryBytes: u.PeakMemoryBytes,
			PeakMemorySource: u.PeakMemorySource, PidsPeak: u.PidsPeak, OomKills: u.OOMKills,
			WallMs: time.Since(in.Created).Milliseconds(),
		},
		RunningExecs: int32(in.Execs), FirstEventOffset: in.FirstEvent, NextEventOffset: in.NextEvent,
		Owner: in.Owner, Profile: in.Profile,
	}
}

// notFoundSandbox is GetSandbox's answer for a sandbox the caller has
// not: seed 001's SandboxNotFound, not an error, with msg saying why.
func notFoundSandbox(id, msg string) *execfarmv1.Sandbox {
	return &execfarmv1.Sandbox{SandboxId: id, State: execfarmv1.SandboxState_SANDBOX_STATE_NOT_FOUND, Message: msg}
}

func fileInfoToProto(fi session.FileInfo) *execfarmv1.FileInfo {
	return &execfarmv1.FileInfo{
		Name: fi.Name, Path: fi.Path, Size: fi.Size, Type: execfarmv1.FileType(fi.Type),
		Mode: fi.Mode, ModTimeMs: unixMs(fi.ModTime), LinkTarget: fi.LinkTarget, NotUtf8: fi.NotUTF8,
	}
}

func streamToProto(s registry.Stream) execfarmv1.OutputStream {
	if s == registry.Stderr {
		return execfarmv1.OutputStream_OUTPUT_STREAM_STDERR
	}
	return execfarmv1.OutputStream_OUTPUT_STREAM_STDOUT
}

func eventToProto(sandboxID string, en eventlog.Entry[*session.Event]) *execfarmv1.SandboxEvent {
	e := en.Value
	out := &execfarmv1.SandboxEvent{Offset: en.Offset, TimeMs: en.Time.UnixMilli(), SandboxId: sandboxID}
	switch e.Kind {
	case session.EventReady:
		out.Event = &execfarmv1.SandboxEvent_Ready{Ready: &execfarmv1.SandboxReadyEvent{}}
	case session.EventExecStarted:
		out.Event = &execfarmv1.SandboxEvent_ExecStarted{ExecStarted: &execfarmv1.ExecStartedEvent{
			ExecutionId: e.ExecutionID, Runtime: runtimeToProto(e.Runtime), CodePreview: e.CodePreview, Workdir: e.Workdir}}
	case session.EventExecOutput:
		out.Event = &execfarmv1.SandboxEvent_ExecOutput{ExecOutput: &execfarmv1.ExecOutputEvent{
			ExecutionId: e.ExecutionID, Stream: streamToProto(e.Stream), Data: e.Data, StreamOffset: e.StreamOffset}}
	case session.EventExecEnded:
		out.Event = &execfarmv1.SandboxEvent_ExecEnded{ExecEnded: &execfarmv1.ExecEndedEvent{
			ExecutionId: e.ExecutionID, Result: resultToProto(e.ExecutionID, e.Result)}}
	case session.EventFileWritten:
		out.Event = &execfarmv1.SandboxEvent_FileWritten{FileWritten: &execfarmv1.FileWrittenEvent{Path: e.Path, Size: e.Size}}
	case session.EventFileRemoved:
		out.Event = &execfarmv1.SandboxEvent_FileRemoved{FileRemoved: &execfarmv1.FileRemovedEvent{Path: e.Path}}
	case session.EventDirectoryMade:
		out.Event = &execfarmv1.SandboxEvent_DirectoryMade{DirectoryMade: &execfarmv1.DirectoryMadeEvent{Path: e.Path}}
	case session.EventFileMoved:
		out.Event = &execfarmv1.SandboxEvent_FileMoved{FileMoved: &execfarmv1.FileMovedEvent{Source: e.Path, Destination: e.Destination}}
	case session.EventExpiring:
		out.Event = &execfarmv1.SandboxEvent_Expiring{Expiring: &execfarmv1.SandboxExpiringEvent{Reason: execfarmv1.EndReason(e.Reason)}}
	case session.EventEnded:
		out.Event = &execfarmv1.SandboxEvent_Ended{Ended: &execfarmv1.SandboxEndedEvent{
			Reason: execfarmv1.EndReason(e.Reason), CancelledExecs: int32(e.CancelledExecs), Message: e.Message}}
	}
	return out
}
