package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SchemaVersion is the version of the fleet's streams, buckets and
// messages. Every name carries it (…_V1); an existing stream or bucket with
// the name but not this schema is refused by Setup.
const SchemaVersion = "1"

// Names of the fleet's JetStream objects and subjects.
const (
	StreamSpawns   = "AVENOR_SPAWNS_V1"
	StreamEvents   = "AVENOR_EVENTS_V1"
	BucketRuntimes = "AVENOR_RUNTIMES_V1"
	BucketNodes    = "AVENOR_NODES_V1"
	BucketReplies  = "AVENOR_SPAWN_REPLIES_V1"
	// metaSchema is the metadata key every stream and bucket carries.
	metaSchema = "avenor_schema"

	spawnSubjectPrefix = "avenor.spawn."
	eventSubjectPrefix = "avenor.events."
	rpcSubjectPrefix   = "avenor.node."
	// DefaultPool is the pool of a node without --pool and of a spawn
	// without "pool".
	DefaultPool = "default"
	// headerReply names the inbox a fleet spawn's result goes to.
	headerReply = "Avenor-Reply"
	// headerSchema is the schema of a spawn message.
	headerSchema = "Avenor-Schema"
)

var (
	// ErrNoServer: no NATS server answers at the URL.
	ErrNoServer = errors.New("no NATS server answers")
	// ErrCredentials: the server refused the credentials.
	ErrCredentials = errors.New("the NATS server refused the credentials")
	// ErrNoJetStream: the server runs without JetStream.
	ErrNoJetStream = errors.New("the NATS server has no JetStream")
	// ErrIncompatible: a stream or bucket of the fleet's name exists with
	// another schema.
	ErrIncompatible = errors.New("incompatible fleet stream")
	// ErrBadName: a node or pool name is not one NATS subject token.
	ErrBadName = errors.New("invalid fleet name")
)

// Auth is how a fleet member authenticates to NATS. The zero value uses
// only what the URL carries (nats://user:password@host:4222).
type Auth struct {
	// CredsFile is a NATS .creds file (user JWT + nkey seed).
	CredsFile string
	// NkeyFile is a file holding an nkey seed (SU…).
	NkeyFile string
	// TLSCA, TLSCert, TLSKey: a CA to verify the servers, and a client
	// certificate for mutual TLS. Either or both.
	TLSCA, TLSCert, TLSKey string
}

// Connect dials the servers of url (comma-separated) and checks that
// JetStream answers. The errors name the URL and the fix.
func Connect(ctx context.Context, url, name string, auth Auth) (*nats.Conn, jetstream.JetStream, error) {
	if strings.TrimSpace(url) == "" {
		return nil, nil, fmt.Errorf("fleet: no NATS URL given (e.g. nats://127.0.0.1:4222; `avenor fleet dev` starts one)")
	}
	opts := []nats.Option{
		nats.Name(name), nats.Timeout(ConnectTimeout),
		// After the first connection, a lost server is reconnected to
		// (another of the cluster) for ever: a fleet member rides out a
		// server's loss.
		nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
	}
	if auth.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(auth.CredsFile))
	}
	if auth.NkeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(auth.NkeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("fleet: reading the nkey seed %s: %w", auth.NkeyFile, err)
		}
		opts = append(opts, o)
	}
	if auth.TLSCA != "" {
		opts = append(opts, nats.RootCAs(auth.TLSCA))
	}
	if auth.TLSCert != "" || auth.TLSKey != "" {
		if auth.TLSCert == "" || auth.TLSKey == "" {
			return nil, nil, fmt.Errorf("fleet: a client certificate needs both --fleet-tls-cert and --fleet-tls-key")
		}
		opts = append(opts, nats.ClientCert(auth.TLSCert, auth.TLSKey))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, connectError(url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("fleet: %s: %w", redact(url), err)
	}
	actx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		nc.Close()
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return nil, nil, fmt.Errorf("fleet: %s: %w (start nats-server with -js, or `avenor fleet dev`)", redact(url), ErrNoJetStream)
		}
		return nil, nil, fmt.Errorf("fleet: %s: JetStream does not answer: %w", redact(url), err)
	}
	return nc, js, nil
}

// connectError turns a nats.Connect error into the user's text.
func connectError(url string, err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		strings.Contains(strings.ToLower(err.Error()), "authorization violation"):
		return fmt.Errorf("fleet: %s: %w (%v); check the user and password in the URL, --fleet-creds or --fleet-nkey", redact(url), ErrCredentials, err)
	case errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("fleet: %s: %w (%v); check the URL and that nats-server runs there (`avenor fleet dev` starts one)", redact(url), ErrNoServer, err)
	}
	return fmt.Errorf("fleet: connecting to %s: %w", redact(url), err)
}

// redact drops the password of a URL for messages.
func redact(url string) string {
	parts := strings.Split(url, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if s := strings.Index(p, "://"); s >= 0 && s < at {
				parts[i] = p[:s+3] + "***@" + p[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// Options shapes the streams Setup creates. The zero value is a
// single-server fleet with the default bounds.
type Options struct {
	// Replicas of every stream and bucket; default 1. A 3-server cluster
	// uses 3 so the loss of one server loses nothing.
	Replicas int
	// EventsMaxAge and EventsMaxBytes bound the events stream; defaults
	// DefaultEventsMaxAge and DefaultEventsMaxBytes.
	EventsMaxAge   time.Duration
	EventsMaxBytes int64
}

// Stores are the fleet's JetStream objects.
type Stores struct {
	JS       jetstream.JetStream
	Spawns   jetstream.Stream
	Events   jetstream.Stream
	Runtimes jetstream.KeyValue
	Nodes    jetstream.KeyValue
	// Replies keeps each spawn's answer for ReplyKeep, by stream sequence.
	Replies jetstream.KeyValue
}

// Setup creates the fleet's streams and buckets, or opens them when they
// exist with this schema. One made by an incompatible version is refused
// (ErrIncompatible) and nothing is changed.
func Setup(ctx context.Context, js jetstream.JetStream, o Options) (*Stores, error) {
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.EventsMaxAge <= 0 {
		o.EventsMaxAge = DefaultEventsMaxAge
	}
	if o.EventsMaxBytes <= 0 {
		o.EventsMaxBytes = DefaultEventsMaxBytes
	}
	meta := map[string]string{metaSchema: SchemaVersion}
	st := &Stores{JS: js}
	var err error
	st.Spawns, err = ensureStream(ctx, js, jetstream.StreamConfig{
		Name: StreamSpawns, Subjects: []string{spawnSubjectPrefix + "*"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: o.Replicas,
		Duplicates: DedupeWindow, Metadata: meta,
	})
	if err != nil {
		return nil, err
	}
	st.Events, err = ensureStream(ctx, js, jetstream.StreamConfig{
		Name: StreamEvents, Subjects: []string{eventSubjectPrefix + ">"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: o.Replicas,
		MaxAge: o.EventsMaxAge, MaxBytes: o.EventsMaxBytes, Duplicates: DedupeWindow, Metadata: meta,
	})
	if err != nil {
		return nil, err
	}
	st.Runtimes, err = ensureBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: BucketRuntimes, History: 1, Storage: jetstream.FileStorage, Replicas: o.Replicas, Metadata: meta,
	})
	if err != nil {
		return nil, err
	}
	st.Nodes, err = ensureBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: BucketNodes, History: 1, TTL: PresenceTTL, Storage: jetstream.FileStorage, Replicas: o.Replicas, Metadata: meta,
	})
	if err != nil {
		return nil, err
	}
	st.Replies, err = ensureBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: BucketReplies, History: 1, TTL: ReplyKeep, Storage: jetstream.FileStorage, Replicas: o.Replicas, Metadata: meta,
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// untilSetUp runs one set-up step again while it fails for a cluster that
// cannot answer yet (a request timed out, JetStream temporarily
// unavailable), within SetupTimeout; any other error is the step's.
func untilSetUp[T any](ctx context.Context, step func() (T, error)) (T, error) {
	deadline := time.Now().Add(SetupTimeout)
	wait := 250 * time.Millisecond
	for {
		v, err := step()
		if err == nil || !transientSetup(ctx, err) || time.Now().Add(wait).After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// transientSetup reports whether err is a cluster not answering yet
// rather than a refusal: a JetStream request that timed out while ctx
// lives, or a 503 (JetStream temporarily unavailable, no leader yet).
func transientSetup(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.Code == 503 || api.Code == 504
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return untilSetUp(ctx, func() (jetstream.Stream, error) { return openStream(ctx, js, cfg) })
}

func openStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another member created it first: check what it made.
			s, err = js.Stream(ctx, cfg.Name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: opening stream %s: %w", cfg.Name, err)
	}
	return s, checkSchema("stream", cfg.Name, s.CachedInfo().Config, cfg.Retention)
}

func ensureBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return untilSetUp(ctx, func() (jetstream.KeyValue, error) { return openBucket(ctx, js, cfg) })
}

func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: opening bucket %s: %w", cfg.Bucket, err)
	}
	s, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("fleet: reading bucket %s: %w", cfg.Bucket, err)
	}
	return kv, checkSchema("bucket", cfg.Bucket, s.CachedInfo().Config, jetstream.LimitsPolicy)
}

// checkSchema refuses a stream whose schema metadata or retention is not
// this version's.
func checkSchema(kind, name string, got jetstream.StreamConfig, retention jetstream.RetentionPolicy) error {
	schema := got.Metadata[metaSchema]
	if schema == SchemaVersion && got.Retention == retention {
		return nil
	}
	if schema == "" {
		schema = "none"
	}
	return fmt.Errorf("fleet: %s %s: %w: it has schema %s and %s retention, this avenor needs schema %s with %s retention; "+
		"it was made by another avenor version or by hand: remove it (nats stream rm %s) or use another NATS account",
		kind, name, ErrIncompatible, schema, got.Retention, SchemaVersion, retention, streamName(kind, name))
}

func streamName(kind, name string) string {
	if kind == "bucket" {
		return "KV_" + name
	}
	return name
}

// CheckName refuses a node or pool name that is not one subject token of
// letters, digits, '-' and '_'.
func CheckName(what, name string) error {
	if name == "" {
		return fmt.Errorf("fleet: %w: %s is empty", ErrBadName, what)
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("fleet: %w: %s %q may hold only letters, digits, '-' and '_'", ErrBadName, what, name)
		}
	}
	if len(name) > 64 {
		return fmt.Errorf("fleet: %w: %s %q is longer than 64 bytes", ErrBadName, what, name)
	}
	return nil
}

// spawnSubject is the work-queue subject of a pool.
func spawnSubject(pool string) string { return spawnSubjectPrefix + pool }

// rpcSubject is the request/reply subject of a node.
func rpcSubject(node string) string { return rpcSubjectPrefix + node + ".rpc" }

// eventSubject is the events subject of a fleet runtime id <node>/<rt>.
func eventSubject(fleetID string) string {
	return eventSubjectPrefix + strings.ReplaceAll(fleetID, "/", ".")
}

// consumerName is the durable pull consumer of a pool, shared by its nodes.
func consumerName(pool string) string { return "AVENOR_POOL_" + pool + "_V1" }

// NC is the connection the stores were opened on.
func (s *Stores) NC() *nats.Conn { return s.JS.Conn() }
