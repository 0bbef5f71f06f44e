//go:build !linux

package cgroup

import (
	"fmt"
	"os"
)

// Manager is one sandbox's cgroup; off Linux it cannot be created.
type Manager struct{}

func notSupported(op string) error {
	return fmt.Errorf("cgroup: %s: %w", op, ErrNotSupported)
}

// DetectMode returns Unavailable off Linux.
func DetectMode() Mode { return Unavailable }

// New returns an error wrapping ErrNotSupported off Linux.
func New(cfg Config, name string, l Limits) (*Manager, error) { return nil, notSupported("new") }

// Cleanup returns an error wrapping ErrNotSupported off Linux.
func Cleanup(cfg Config) (int, error) { return 0, notSupported("cleanup") }

// Place returns an error wrapping ErrNotSupported off Linux.
func Place(cfg Config) (Placement, error) { return Placement{}, notSupported("place") }

// Probe reports Unavailable off Linux.
func Probe(cfg Config) ProbeResult {
	return ProbeResult{Mode: Unavailable, Err: notSupported("probe")}
}

func (m *Manager) Path() string               { return "" }
func (m *Manager) Paths() map[string]string   { return nil }
func (m *Manager) Mode() Mode                 { return Unavailable }
func (m *Manager) Warnings() []string         { return nil }
func (m *Manager) FD() (*os.File, error)      { return nil, notSupported("fd") }
func (m *Manager) AddProc(pid int) error      { return notSupported("add process") }
func (m *Manager) SetCPUWeight(uint64) error  { return notSupported("set CPU weight") }
func (m *Manager) Kill() error                { return notSupported("kill") }
func (m *Manager) Only(pid int) (bool, error) { return false, notSupported("list processes") }
func (m *Manager) Others(pid int) ([]int, error) {
	return nil, notSupported("list processes")
}
func (m *Manager) Usage() (Usage, error)    { return Usage{}, notSupported("usage") }
func (m *Manager) Sample()                  {}
func (m *Manager) OOMKilled() (bool, error) { return false, notSupported("read OOM state") }
func (m *Manager) Delete() error            { return notSupported("delete") }
func (m *Manager) ResetPeaks() error        { return notSupported("reset peaks") }

// NewPayload returns an error wrapping ErrNotSupported off Linux.
func (m *Manager) NewPayload(pidsMax int64) (*os.File, error) { return nil, notSupported("payload") }

// PayloadTasks returns an error wrapping ErrNotSupported off Linux.
func (m *Manager) PayloadTasks() (*os.File, error) { return nil, notSupported("payload tasks") }

// RemoveParent returns an error wrapping ErrNotSupported off Linux.
func RemoveParent(cfg Config) error { return notSupported("remove parent") }

// SiblingParents is not supported off Linux.
func SiblingParents(cfg Config, prefix string) ([]string, error) {
	return nil, notSupported("list parents")
}

// Exec is an exec's cgroup; off Linux none can exist.
type Exec struct{}

// NewExec returns an error wrapping ErrNotSupported off Linux.
func (m *Manager) NewExec(name string, byThread bool) (*Exec, []*os.File, error) {
	return nil, nil, notSupported("exec cgroup")
}

func (e *Exec) Path() string                     { return "" }
func (e *Exec) Kill(skip int) error              { return notSupported("kill exec cgroup") }
func (e *Exec) Populated(skip int) (bool, error) { return false, notSupported("list exec cgroup") }
func (e *Exec) PidsPeak() (int64, bool)          { return 0, false }
func (e *Exec) CPU() (int64, int64, error)       { return 0, 0, notSupported("read exec cgroup") }
func (e *Exec) Remove() error                    { return notSupported("remove exec cgroup") }

// ParentWritable returns an error wrapping ErrNotSupported off Linux.
func ParentWritable(cfg Config) error { return notSupported("check parent") }
