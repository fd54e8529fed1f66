package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// raftmqBin is the raftmq binary built once for the process tests.
var raftmqBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "raftmq-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	raftmqBin = filepath.Join(dir, "raftmq")
	// Built in the main module (the parent directory), with its go.sum.
	build := exec.Command("go", "build", "-o", raftmqBin, "./cmd/raftmq")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building raftmq:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
