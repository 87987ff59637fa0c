//go:build !linux

package writer

import "io"

// pipeSizer resizes a pipe on Linux only (pipesize_linux.go).
type pipeSizer struct{ grown bool }

func newPipeSizer(io.Writer) *pipeSizer { return nil }

func (p *pipeSizer) grow()   {}
func (p *pipeSizer) shrink() {}
