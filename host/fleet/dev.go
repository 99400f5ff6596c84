package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/avenor-go/avenor/sdk/safefile"
)

// DevReadyTimeout bounds how long `avenor fleet dev` waits for its
// embedded server to accept connections.
const DevReadyTimeout = 10 * time.Second

// DevHost is where `avenor fleet dev` listens unless told otherwise:
// loopback, so only this machine reaches it.
const DevHost = "127.0.0.1"

// Names of the nkey seed files Dev writes (DevKeys.Write).
const (
	// DevFleetKeyFile is the seed of `avenor fleet serve`: it may queue
	// spawns on every pool.
	DevFleetKeyFile = "fleet.nk"
	// devNodeKeyPrefix + pool + ".nk" is the seed of a node of that pool.
	devNodeKeyPrefix = "node-"
)

// DevConfig configures the embedded server of `avenor fleet dev`.
type DevConfig struct {
	// StoreDir holds JetStream's files. Required.
	StoreDir string
	// Host is the address to listen on; default DevHost (loopback). Any
	// other exposes the server to the network: its credentials still
	// guard it.
	Host string
	// Port is the client port; 0 picks a free one.
	Port int
	// Pools are the pools whose nodes get a key; default [DefaultPool].
	Pools []string
}

// DevKeys are the credentials Dev generated: nothing connects to its
// server without one of them. Seeds, not files: Write puts them on disk.
type DevKeys struct {
	// Fleet is the seed of `avenor fleet serve`: it may publish everywhere,
	// spawns on every pool included.
	Fleet []byte
	// Nodes are the seeds of the node agents, by pool: a node may take
	// spawns of its pool only, and never queue a spawn or send another
	// node a request (only the fleet socket does).
	Nodes map[string][]byte
}

// Dev is the running server of `avenor fleet dev` and its credentials.
type Dev struct {
	*server.Server
	Keys DevKeys
}

// StartDev starts a single-node JetStream server for trying a fleet on one
// machine: on loopback unless cfg.Host says otherwise, and requiring an
// nkey — one for the fleet socket, one per pool for its nodes, generated
// here (Keys) — with per-pool permissions. An unauthenticated client is
// refused, and a node's key cannot queue a spawn: whatever a node runs
// came over an authenticated connection from the fleet socket's key.
// Shutdown stops it.
func StartDev(cfg DevConfig) (*Dev, error) {
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("fleet dev: a store directory is required")
	}
	if cfg.Host == "" {
		cfg.Host = DevHost
	}
	pools := cfg.Pools
	if len(pools) == 0 {
		pools = []string{DefaultPool}
	}
	keys := DevKeys{Nodes: map[string][]byte{}}
	var users []*server.NkeyUser
	add := func(perms *server.Permissions) ([]byte, error) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, err
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, err
		}
		users = append(users, &server.NkeyUser{Nkey: pub, Permissions: perms})
		return seed, nil
	}
	var err error
	if keys.Fleet, err = add(nil); err != nil {
		return nil, fmt.Errorf("fleet dev: generating a key: %w", err)
	}
	for _, pool := range pools {
		if err := CheckName("pool", pool); err != nil {
			return nil, err
		}
		if _, dup := keys.Nodes[pool]; dup {
			return nil, fmt.Errorf("fleet dev: pool %q is given twice", pool)
		}
		if keys.Nodes[pool], err = add(NodePermissions(pool, pools)); err != nil {
			return nil, fmt.Errorf("fleet dev: generating a key: %w", err)
		}
	}
	port := cfg.Port
	if port == 0 {
		port = -1 // nats-server: a random free port
	}
	s, err := server.NewServer(&server.Options{
		ServerName: "avenor-fleet-dev", Host: cfg.Host, Port: port, Nkeys: users,
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
	return &Dev{Server: s, Keys: keys}, nil
}

// NodePermissions are what a node of pool may do on a fleet's NATS server
// (the rest of the fleet is in pools): take its pool's spawns through its
// pool's consumer, keep the registry and its presence, publish its events
// and answer requests. It may not publish a spawn (avenor.spawn.>), read
// the spawn subjects or the spawns stream's messages directly, touch
// another pool's consumer, or send a node a request (avenor.node.>): a
// node executes what its pool's subject carries, so only the fleet socket
// may put anything there. docs/fleet.md shows the same as a server config.
func NodePermissions(pool string, pools []string) *server.Permissions {
	deny := []string{
		spawnSubjectPrefix + ">",
		rpcSubjectPrefix + ">",
		"$JS.API.STREAM.MSG.GET." + StreamSpawns,
		"$JS.API.DIRECT.GET." + StreamSpawns,
		"$JS.API.DIRECT.GET." + StreamSpawns + ".>",
		"$JS.API.STREAM.PURGE." + StreamSpawns,
		"$JS.API.STREAM.DELETE." + StreamSpawns,
		"$JS.API.STREAM.UPDATE." + StreamSpawns,
	}
	for _, other := range pools {
		if other == pool {
			continue
		}
		c := consumerName(other)
		deny = append(deny,
			"$JS.API.CONSUMER.MSG.NEXT."+StreamSpawns+"."+c,
			"$JS.API.CONSUMER.CREATE."+StreamSpawns+"."+c,
			"$JS.API.CONSUMER.CREATE."+StreamSpawns+"."+c+".>",
			"$JS.API.CONSUMER.DURABLE.CREATE."+StreamSpawns+"."+c,
			"$JS.API.CONSUMER.DELETE."+StreamSpawns+"."+c,
			"$JS.ACK."+StreamSpawns+"."+c+".>",
		)
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{">"}, Deny: deny},
		Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{spawnSubjectPrefix + ">"}},
	}
}

// NodeKeyFile is the name of the seed file of a node of pool.
func NodeKeyFile(pool string) string { return devNodeKeyPrefix + pool + ".nk" }

// Write puts the seeds in dir, which is made private (0700, this user's),
// each in a file of mode 0600: DevFleetKeyFile and NodeKeyFile(pool). It
// returns the files' paths by role ("fleet", or the pool).
func (k DevKeys) Write(dir string) (map[string]string, error) {
	if err := safefile.PrivateDir(dir); err != nil {
		return nil, fmt.Errorf("fleet dev: credentials directory: %w", err)
	}
	paths := map[string]string{}
	write := func(role, name string, seed []byte) error {
		p := filepath.Join(dir, name)
		if err := safefile.WriteFile(p, append(append([]byte{}, seed...), '\n'), 0o600); err != nil {
			return fmt.Errorf("fleet dev: writing %s: %w", p, err)
		}
		paths[role] = p
		return nil
	}
	if err := write("fleet", DevFleetKeyFile, k.Fleet); err != nil {
		return nil, err
	}
	for pool, seed := range k.Nodes {
		if err := write(pool, NodeKeyFile(pool), seed); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// RemoveKeys removes the files Write made in dir, and dir when it is left
// empty.
func (k DevKeys) RemoveKeys(dir string) error {
	var errs []error
	names := []string{DevFleetKeyFile}
	for pool := range k.Nodes {
		names = append(names, NodeKeyFile(pool))
	}
	for _, n := range names {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(dir) // only when empty
	return errors.Join(errs...)
}
