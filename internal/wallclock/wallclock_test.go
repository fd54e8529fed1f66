package wallclock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOffsetSteps(t *testing.T) {
	defer SetOffset(0)
	before := time.Now()
	SetOffset(-time.Hour)
	got := Now()
	if d := before.Sub(got); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("stepped back an hour, Now is %v before time.Now", d)
	}
	SetOffset(0)
	if d := time.Until(Now()); d > time.Second || d < -time.Second {
		t.Fatalf("offset 0: Now differs from time.Now by %v", d)
	}
}

func TestWatchFile(t *testing.T) {
	defer SetOffset(0)
	path := filepath.Join(t.TempDir(), "clock")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var logged []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		WatchFile(ctx, path, func(f string, a ...any) { mu.Lock(); logged = append(logged, f); mu.Unlock() })
	}()
	defer func() { cancel(); wg.Wait() }()
	waitOffset := func(want time.Duration) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for Offset() != want {
			if time.Now().After(deadline) {
				t.Fatalf("offset %v, want %v", Offset(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, c := range []struct {
		text string
		want time.Duration
	}{{"30000\n", 30 * time.Second}, {"-90000", -90 * time.Second}, {"", 0}} {
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		waitOffset(c.want)
	}
	// A bad file keeps the offset and is reported.
	if err := os.WriteFile(path, []byte("soon"), 0o644); err != nil {
		t.Fatal(err)
	}
	SetOffset(5 * time.Second)
	errorsLogged := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, l := range logged {
			if strings.HasPrefix(l, "fault clock file") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Second)
	for errorsLogged() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("bad file: %d errors logged", errorsLogged())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := Offset(); got != 5*time.Second {
		t.Fatalf("a bad file changed the offset to %v", got)
	}
}
