//go:build !linux

package oomscore

import "errors"

// Max is the adjustment every runtime process starts with.
const Max = 1000

var errUnsupported = errors.New("oomscore: Linux only")

// Floor is Linux only.
func Floor() error { return errUnsupported }

// Forker is Linux only.
type Forker struct{}

// Open is Linux only.
func Open() (*Forker, error) { return nil, errUnsupported }

// Raise is Linux only.
func (k *Forker) Raise() error { return errUnsupported }

// Restore is Linux only.
func (k *Forker) Restore() error { return errUnsupported }
