package stable

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	hostrun "github.com/avenor-go/avenor/host/run"
)

// SpawnParams are the params of spawn (docs/control-protocol.md#spawn),
// read and checked by host/run, which builds the runtime's Spec from them.
type SpawnParams = hostrun.SpawnParams

// spawnHash is the idempotency hash of p: SHA-256 of the canonical params without the
// key itself, the timeout normalised (600, "600" and "10m" are one value).
func spawnHash(p SpawnParams) string {
	c := p
	c.IdempotencyKey = ""
	c.Timeout = nil
	d, _ := hostrun.ParseTimeout(p.Timeout)
	data, _ := json.Marshal(struct {
		SpawnParams
		TimeoutNS int64 `json:"timeout_ns"`
	}{c, int64(d)})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
