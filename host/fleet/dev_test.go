package fleet_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/avenor-go/avenor/host/fleet"
)

// TestDevRequiresCredentials: the server `avenor fleet dev` starts listens
// on loopback and admits only the keys it generated. Without one a client
// is refused (authorization violation); a node's key cannot queue a spawn,
// nor take another pool's; the fleet socket's key queues one and the
// pool's node takes it over its own authenticated connection.
func TestDevRequiresCredentials(t *testing.T) {
	dev, err := fleet.StartDev(fleet.DevConfig{StoreDir: t.TempDir(), Pools: []string{"default", "gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Shutdown(); dev.WaitForShutdown() })
	if ip := dev.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Errorf("fleet dev listens on %v, want loopback", ip)
	}
	url := dev.ClientURL()
	credsDir := filepath.Join(t.TempDir(), "creds")
	paths, err := dev.Keys.Write(credsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{credsDir, paths["fleet"], paths["default"], paths["gpu"]} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := os.FileMode(0o600); fi.IsDir() && fi.Mode().Perm() != 0o700 || !fi.IsDir() && fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v", p, fi.Mode())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// No credentials: refused before anything is published.
	if nc, err := nats.Connect(url, nats.Timeout(2*time.Second), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an unauthenticated client connected to fleet dev")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Errorf("unauthenticated connect: %v, want an authorization violation", err)
	}
	if _, _, err := fleet.Connect(ctx, url, "anon", fleet.Auth{}); !errors.Is(err, fleet.ErrCredentials) {
		t.Errorf("fleet.Connect without credentials: %v, want ErrCredentials", err)
	}

	// The fleet socket's key: streams set up, a spawn queued.
	gnc, gjs, err := fleet.Connect(ctx, url, "fleet", fleet.Auth{NkeyFile: paths["fleet"]})
	if err != nil {
		t.Fatal(err)
	}
	defer gnc.Close()
	if _, err := fleet.Setup(ctx, gjs, fleet.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := gjs.Publish(ctx, "avenor.spawn.default", []byte(`{"prompt":"from the fleet"}`)); err != nil {
		t.Fatalf("the fleet key could not queue a spawn: %v", err)
	}

	// A node's key: no spawn of its own making, no other pool's spawns.
	violations := make(chan error, 16)
	nkeyOpt, err := nats.NkeyOptionFromSeed(paths["default"])
	if err != nil {
		t.Fatal(err)
	}
	nnc, err := nats.Connect(url, nkeyOpt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nnc.Close()
	if err := nnc.Publish("avenor.spawn.default", []byte(`{"prompt":"rm -rf /"}`)); err != nil {
		t.Fatal(err)
	}
	_ = nnc.Flush()
	select {
	case err := <-violations:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Errorf("node publishing a spawn: %v, want a permissions violation", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a node's key published a spawn without a permissions violation")
	}
	njs, err := jetstream.New(nnc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fleet.Setup(ctx, njs, fleet.Options{})
	if err != nil {
		t.Fatalf("a node's key cannot open the fleet's streams: %v", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = st.Spawns.CreateOrUpdateConsumer(cctx, jetstream.ConsumerConfig{
		Durable: "AVENOR_POOL_gpu_V1", FilterSubject: "avenor.spawn.gpu", AckPolicy: jetstream.AckExplicitPolicy,
	})
	ccancel()
	if err == nil {
		t.Error("a node of pool default created pool gpu's consumer")
	}
	cons, err := st.Spawns.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "AVENOR_POOL_default_V1", FilterSubject: "avenor.spawn.default", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatalf("a node of pool default cannot create its consumer: %v", err)
	}
	batch, err := cons.Fetch(5, jetstream.FetchMaxWait(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		got = append(got, string(m.Data()))
		_ = m.Ack()
	}
	if len(got) != 1 || !strings.Contains(got[0], "from the fleet") {
		t.Errorf("the pool's node took %q, want only the fleet's spawn", got)
	}
}
