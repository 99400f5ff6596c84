package fleet

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DevReadyTimeout bounds how long `avenor fleet dev` waits for its
// embedded server to accept connections.
const DevReadyTimeout = 10 * time.Second

// DevConfig configures the embedded server of `avenor fleet dev`.
type DevConfig struct {
	// StoreDir holds JetStream's files. Required.
	StoreDir string
	// Port is the client port on 127.0.0.1; 0 picks a free one.
	Port int
}

// Dev starts a single-node JetStream server on loopback, for trying a
// fleet on one machine. Shutdown stops it.
func Dev(cfg DevConfig) (*server.Server, error) {
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("fleet dev: a store directory is required")
	}
	port := cfg.Port
	if port == 0 {
		port = -1 // nats-server: a random free port
	}
	s, err := server.NewServer(&server.Options{
		ServerName: "avenor-fleet-dev", Host: "127.0.0.1", Port: port,
		JetStream: true, StoreDir: cfg.StoreDir, NoSigs: true, NoLog: true,
	})
	if err != nil {
		return nil, fmt.Errorf("fleet dev: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(DevReadyTimeout) {
		s.Shutdown()
		return nil, fmt.Errorf("fleet dev: the embedded NATS server did not accept connections within %v (is port %d free?)", DevReadyTimeout, cfg.Port)
	}
	return s, nil
}
