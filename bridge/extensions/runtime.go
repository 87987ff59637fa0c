package extensions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MinNode is the oldest Node the extension host runs on: pi 1.6.0's
// (its package.json's engines), whose bundle it imports.
const MinNode = "22.19.0"

// FindNode is node on env's PATH and its version; an error when missing
// or older than MinNode.
func FindNode(env []string) (string, string, error) {
	path := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	node := ""
	for _, d := range filepath.SplitList(path) {
		if st, err := os.Stat(filepath.Join(d, "node")); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			node = filepath.Join(d, "node")
			break
		}
	}
	if node == "" {
		return "", "", fmt.Errorf("no node on PATH: pi extensions run in Node %s or later (pi 1.6.0's runtime, which claude-rpc loads them with, needs it); install it from https://nodejs.org", MinNode)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %w", node, err)
	}
	v := strings.TrimSpace(string(out))
	return node, v, nil
}

// PiPackage is pi 1.6.0's package folder in cache.
func PiPackage(ctx context.Context, cache, npm string, w io.Writer) (string, error) {
	dir := filepath.Join(cache, "pi-coding-agent-1.6.0", "node_modules", "@earendil-works", "pi-coding-agent")
	if _, err := os.Stat(filepath.Join(dir, "dist", "bundle", "index.js")); err != nil {
		return "", errors.New("pi's runtime is not installed: run scripts/install-pi16")
	}
	return dir, nil
}
