// Command chaostable prints the Markdown tables of docs/RELIABILITY.md's
// "Container runs" from the JSON lines TestContainerChaos appended to
// CHAOS_OUT: chaostable [file ...] (standard input without a file).
package main

import (
	"fmt"
	"os"

	"github.com/raftmq/raftmq/integration/chaos"
)

func main() {
	runs, err := read(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaostable:", err)
		os.Exit(1)
	}
	if len(runs) == 0 {
		fmt.Fprintln(os.Stderr, "chaostable: no runs")
		os.Exit(1)
	}
	fmt.Print(chaos.Table(runs))
}

// read reads every file's runs, or standard input's without files.
func read(files []string) ([]chaos.Result, error) {
	if len(files) == 0 {
		return chaos.ReadResults(os.Stdin)
	}
	var out []chaos.Result
	for _, name := range files {
		runs, err := readFile(name)
		if err != nil {
			return out, err
		}
		out = append(out, runs...)
	}
	return out, nil
}

func readFile(name string) ([]chaos.Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return chaos.ReadResults(f)
}
