//go:build !unix

package claudecli

import "errors"

const ptySupported = false

func startPTYTurn(Config, Session, []byte) (*cliProcess, error) {
	return nil, errors.New("the pty transport is not available on this system")
}
