package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Runtime statuses in the registry beside the supervisor's own (idle,
// running, ended).
const (
	statusStarting = "starting"
	statusEnded    = "ended"
)

// Entry is one runtime's registry record in BucketRuntimes, keyed by its
// fleet id. Only its owner writes it, and only by compare-and-set.
type Entry struct {
	// RuntimeID is the fleet id, <node>/<rt> of the node that first ran it.
	RuntimeID string `json:"runtime_id"`
	// Node owns the runtime now; Local is its id in that node's supervisor.
	Node  string `json:"node"`
	Local string `json:"local"`
	// Base is added to the local seq: a runtime moved to another node
	// continues its fleet stream where the last owner stopped.
	Base int64 `json:"base"`
	// LastSeq is the last fleet seq the owner published.
	LastSeq           int64  `json:"last_seq"`
	Status            string `json:"status"`
	SessionID         string `json:"session_id"`
	Backend           string `json:"backend"`
	Pool              string `json:"pool"`
	PendingPermission bool   `json:"pending_permission"`
	// Permission is the pending permission.request, if any.
	Permission json.RawMessage `json:"permission,omitempty"`
	// Resumable: the backend resumes a session across processes, so the
	// runtime can move when its node is lost.
	Resumable bool `json:"resumable"`
	// Spawn is the spawn's params, for a respawn elsewhere.
	Spawn json.RawMessage `json:"spawn"`
	// StopReason and Error are set when the runtime ended with its lost
	// node: no node runs it, and status answers from the registry.
	StopReason sdk.StopReason `json:"stop_reason,omitempty"`
	Error      string         `json:"error,omitempty"`
	// Moves counts the node changes.
	Moves     int   `json:"moves"`
	UpdatedAt int64 `json:"updated_at"`
}

// Presence is a node's record in BucketNodes; it expires PresenceTTL after
// the node's last refresh.
type Presence struct {
	Node     string `json:"node"`
	Pool     string `json:"pool"`
	PID      int    `json:"pid"`
	Instance string `json:"instance"`
	Since    int64  `json:"since"`
}

// getEntry reads a registry entry and its revision.
func getEntry(ctx context.Context, kv jetstream.KeyValue, id string) (Entry, uint64, error) {
	kve, err := kv.Get(ctx, id)
	if err != nil {
		return Entry{}, 0, err
	}
	var e Entry
	if err := json.Unmarshal(kve.Value(), &e); err != nil {
		return Entry{}, 0, fmt.Errorf("fleet: registry entry %s is not this version's: %w", id, err)
	}
	return e, kve.Revision(), nil
}

// putEntry writes e by compare-and-set on rev (0: create). It returns the
// new revision; jetstream.ErrKeyExists when someone else wrote first.
func putEntry(ctx context.Context, kv jetstream.KeyValue, e Entry, rev uint64) (uint64, error) {
	e.UpdatedAt = time.Now().UnixMilli()
	b, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return kv.Create(ctx, e.RuntimeID, b)
	}
	return kv.Update(ctx, e.RuntimeID, b, rev)
}

// entries reads every registry entry.
func entries(ctx context.Context, kv jetstream.KeyValue) ([]Entry, map[string]uint64, error) {
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var out []Entry
	revs := map[string]uint64{}
	for _, k := range keys {
		if strings.HasPrefix(k, claimPrefix) {
			continue
		}
		e, rev, err := getEntry(ctx, kv, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, e)
		revs[k] = rev
	}
	sort.Slice(out, func(i, j int) bool { return lessID(out[i].RuntimeID, out[j].RuntimeID) })
	return out, revs, nil
}

// liveNodes reads the presence bucket.
func liveNodes(ctx context.Context, kv jetstream.KeyValue) (map[string]Presence, error) {
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return map[string]Presence{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]Presence{}
	for _, k := range keys {
		kve, err := kv.Get(ctx, k)
		if err != nil {
			continue // expired between Keys and Get
		}
		var p Presence
		if json.Unmarshal(kve.Value(), &p) == nil {
			out[k] = p
		}
	}
	return out, nil
}

// lessID orders fleet ids by node, then by the runtime number.
func lessID(a, b string) bool {
	an, ar, _ := strings.Cut(a, "/")
	bn, br, _ := strings.Cut(b, "/")
	if an != bn {
		return an < bn
	}
	if len(ar) != len(br) {
		return len(ar) < len(br)
	}
	return ar < br
}
