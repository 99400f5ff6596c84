package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/avenor-go/avenor/client"
)

// Bounds of the fleet benchmark.
const (
	// fleetJobs is how many spawns each side runs to completion.
	fleetJobs = 40
	// fleetSlots is the slots per node (2 nodes) and half the single
	// stable's: both sides have 8.
	fleetSlots = 4
	// fleetScript is each runtime's turn: short, so the spawn path, not
	// the turn, is what is measured.
	fleetScript = "chunks 5 every=20ms"
)

// BenchmarkFleetSpawnThroughput: spawn-to-completion throughput
// through a fleet — an embedded JetStream server, two node agents
// (`avenor stable --fleet`, 4 slots each) and `avenor fleet serve` — against
// one `avenor stable` with the same 8 slots, in the same run. fleetJobs
// scripted spawns go out at once on each side (the single stable's
// harness waits on wait_for_capacity when full, as a harness does). It
// reports both rates and their ratio; every runtime must end end_turn.
func BenchmarkFleetSpawnThroughput(b *testing.B) {
	bin := avenorBinary(b)
	for range b.N {
		root, err := os.MkdirTemp("", "avf")
		if err != nil {
			b.Fatal(err)
		}
		fleetRate := fleetIteration(b, bin, root)
		singleRate := singleIteration(b, bin, root)
		os.RemoveAll(root)
		b.ReportMetric(fleetRate, "fleet-spawns/s")
		b.ReportMetric(singleRate, "single-spawns/s")
		b.ReportMetric(fleetRate/singleRate, "fleet/single")
	}
}

// benchProc starts avenor in root's environment; stop kills it.
func benchProc(b *testing.B, bin, root string, args ...string) (stop func()) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Env = []string{"HOME=" + root, "TMPDIR=" + root, "XDG_CONFIG_HOME=" + root + "/c", "XDG_STATE_HOME=" + root + "/s",
		"XDG_DATA_HOME=" + root + "/d", "AVENOR_PLUGIN_PATH=" + binDir, "PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(stableShutdownWait):
			_ = cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("avenor %v stderr:\n%s", args[:1], stableTail(stderr.String(), 2000))
		}
	}
}

func dialWait(b *testing.B, sock string) *client.Client {
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := client.Dial(context.Background(), sock)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s does not answer: %v", sock, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fleetIteration(b *testing.B, bin, root string) float64 {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(root, "js"), NoSigs: true, NoLog: true})
	if err != nil {
		b.Fatal(err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		b.Fatal("nats server did not start")
	}
	url := ns.ClientURL()
	for _, n := range []string{"n1", "n2"} {
		stop := benchProc(b, bin, root, "stable", "--control-socket", filepath.Join(root, n+".sock"), "--fleet", url, "--node", n, "--max-runtimes", strconv.Itoa(fleetSlots))
		defer stop()
	}
	stop := benchProc(b, bin, root, "fleet", "serve", "--nats", url, "--control-socket", filepath.Join(root, "fleet.sock"))
	defer stop()
	c := dialWait(b, filepath.Join(root, "fleet.sock"))
	defer c.Close()
	// Both nodes joined: their presence is in the fleet's status.
	for deadline := time.Now().Add(15 * time.Second); ; {
		var st struct {
			Nodes []string `json:"nodes"`
		}
		if c.Call(context.Background(), "status", nil, &st) == nil && len(st.Nodes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the nodes did not join the fleet")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	runJobs(b, c, false)
	return fleetJobs / time.Since(start).Seconds()
}

func singleIteration(b *testing.B, bin, root string) float64 {
	sock := filepath.Join(root, "single.sock")
	stop := benchProc(b, bin, root, "stable", "--control-socket", sock, "--max-runtimes", strconv.Itoa(2*fleetSlots))
	defer stop()
	c := dialWait(b, sock)
	defer c.Close()
	start := time.Now()
	runJobs(b, c, true)
	return fleetJobs / time.Since(start).Seconds()
}

// runJobs spawns fleetJobs at once and waits for every one to end
// end_turn; retry: a capacity refusal waits for a free slot (one stable).
func runJobs(b *testing.B, c *client.Client, retry bool) {
	ctx, cancel := context.WithTimeout(context.Background(), stableDeadline)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, fleetJobs)
	for i := range fleetJobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := client.SpawnParams{Backend: "scripted", Prompt: fleetScript, Label: fmt.Sprintf("job-%d", i)}
			for {
				sp, err := c.Spawn(ctx, p)
				if _, full := client.AsCapacity(err); retry && full {
					if _, err := c.WaitForCapacity(ctx, "5s"); err != nil {
						errs[i] = err
						return
					}
					continue
				}
				if err != nil {
					errs[i] = err
					return
				}
				for {
					rt, err := c.Runtime(ctx, sp.RuntimeID)
					if err != nil {
						errs[i] = err
						return
					}
					if rt.Parked || rt.Status == "ended" {
						if rt.StopReason != "end_turn" {
							errs[i] = fmt.Errorf("%s ended %q", sp.RuntimeID, rt.StopReason)
						}
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("job %d: %v", i, err)
		}
	}
}
