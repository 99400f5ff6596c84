package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// devServer starts fleet dev's server; the Auth is its fleet socket's key.
func devServer(t *testing.T) (*server.Server, Auth) {
	t.Helper()
	s, err := StartDev(DevConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	paths, err := s.Keys.Write(t.TempDir() + "/creds")
	if err != nil {
		t.Fatal(err)
	}
	return s.Server, Auth{NkeyFile: paths["fleet"]}
}

// devConnect starts fleet dev's server and connects to it; the context
// ends with the test, 20 s at most.
func devConnect(t *testing.T) (context.Context, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	s, auth := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	nc, js, err := Connect(ctx, s.ClientURL(), "test", auth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return ctx, nc, js
}

// TestSetupIdempotentAndSchemaChecked: Setup creates the versioned streams
// and buckets, opens them again unchanged, and refuses a stream of the
// fleet's name whose schema is another version's, changing nothing.
func TestSetupIdempotentAndSchemaChecked(t *testing.T) {
	ctx, _, js := devConnect(t)
	for range 2 {
		st, err := Setup(ctx, js, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Spawns.CachedInfo().Config; got.Retention != jetstream.WorkQueuePolicy || got.Metadata[metaSchema] != SchemaVersion {
			t.Fatalf("spawns stream config %+v", got)
		}
	}
	// A future version's stream: same name, schema 2.
	ev, err := js.Stream(ctx, StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ev.CachedInfo().Config
	cfg.Metadata = map[string]string{metaSchema: "2"}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, err = Setup(ctx, js, Options{})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "schema 2") || !strings.Contains(err.Error(), "nats stream rm "+StreamEvents) {
		t.Fatalf("Setup over a schema-2 stream: %v", err)
	}
}

func TestCheckNameAndRedact(t *testing.T) {
	for name, ok := range map[string]bool{"n1": true, "gpu_pool-2": true, "": false, "a.b": false, "a/b": false, "a*": false, "ü": false} {
		if err := CheckName("--node", name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v", name, err)
		}
	}
	if got := redact("nats://u:secret@h:4222,nats://h2:4222"); got != "nats://***@h:4222,nats://h2:4222" {
		t.Errorf("redact = %q", got)
	}
	if !lessID("n1/rt_2", "n1/rt_10") || lessID("n2/rt_1", "n1/rt_9") {
		t.Error("lessID orders by node, then runtime number")
	}
}
