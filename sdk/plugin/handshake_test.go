package plugin

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The protocol major in runtime.proto and in Go must never drift apart, and
// the magic cookie must never change: plugins built against older sdks rely
// on both.
func TestProtocolConstantsArePinned(t *testing.T) {
	data, err := os.ReadFile("../proto/avenor/runtime/v1/runtime.proto")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^// protocol_version: (\d+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("runtime.proto has no `// protocol_version: N` header line")
	}
	v, _ := strconv.Atoi(string(m[1]))
	if v != ProtocolVersion {
		t.Fatalf("runtime.proto says protocol_version %d, plugin.ProtocolVersion is %d", v, ProtocolVersion)
	}
	if MagicCookieKey != "AVENOR_PLUGIN_MAGIC_COOKIE" || MagicCookieValue != "b5e0b3c1-avenor-runtime-plugin-7f1d9a2e" {
		t.Fatal("the magic cookie changed: every installed plugin would stop loading")
	}
}
