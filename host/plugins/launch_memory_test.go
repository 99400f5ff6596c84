package plugins

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
)

// launchedPluginBytes bounds the heap the host holds per running plugin
// that has done nothing yet but start: the process handle, the go-plugin
// client with its stderr reader, the gRPC connection and the Describe
// answer. A supervisor holds one per runtime, so it is a per-runtime cost.
// Measured 47 KB with a 4 KiB stderr reader (2026-12-04), 59 KB with
// 16 KiB, 110 KB with go-plugin's 64 KiB.
const launchedPluginBytes = 64 << 10

// TestLaunchedPluginHeap: what the host keeps per running plugin stays
// within launchedPluginBytes. go-plugin's default stderr reader alone was
// 64 KiB per plugin for its whole life (sdk/plugin.StderrLineBuffer).
func TestLaunchedPluginHeap(t *testing.T) {
	dir := t.TempDir()
	buildSDK(t, dir, "avenor-plugin-echo", "./examples/echo/cmd/avenor-plugin-echo")
	found, err := Finder{PluginPath: []string{dir}}.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if found.Path != filepath.Join(dir, "avenor-plugin-echo") {
		t.Fatalf("found %s", found.Path)
	}
	// One launch first, so that what is made once per process (gRPC's
	// and go-plugin's globals) is not counted per plugin.
	warm, err := Launch(context.Background(), found, "echo", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Client.Kill()
	const n = 8
	before := heapInUse()
	var running []*Launched
	defer func() {
		for _, l := range running {
			l.Client.Kill()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := Launch(context.Background(), found, "echo", nil)
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, l)
	}
	per := (int64(heapInUse()) - int64(before)) / n
	t.Logf("heap per running plugin: %d B", per)
	if per > launchedPluginBytes {
		t.Errorf("the host holds %d B of heap per running plugin, want ≤ %d", per, launchedPluginBytes)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
