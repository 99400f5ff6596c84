package permission_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// BenchmarkFileRoundTrip is the permission round trip through the file
// handler: the broker announces a request and writes <base>.req, a harness
// (this benchmark, watching the directory every 100 µs) writes
// <base>.req.response atomically, and the handler's poll picks it up and
// returns the decision. One op is one request; it reports the median and
// p99 latency from the request to the decision. Run it over 200 requests:
//
//	go test -run '^$' -bench FileRoundTrip -benchtime 200x ./host/permission/
//
// With the contract's 500 ms poll the latency is dominated by the poll: a
// response waits on average half an interval.
func BenchmarkFileRoundTrip(b *testing.B) {
	for _, poll := range []time.Duration{permission.DefaultPollInterval, 10 * time.Millisecond} {
		b.Run("poll="+poll.String(), func(b *testing.B) {
			base := filepath.Join(b.TempDir(), "run.perm")
			br := permission.New(permission.Options{FileBase: base, File: permission.FileOptions{PollInterval: poll}})
			sess := br.Session("ses_bench")
			opts := []sdk.PermissionOption{{ID: "allow", Kind: "allow_once"}, {ID: "deny", Kind: "reject"}}
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := strconv.Itoa(i)
				start := time.Now()
				wait := sess.Record(ctx, sdk.PermissionRequest{ID: id, Tool: "bash", Options: opts}, func(event.Event) {})
				res := make(chan error, 1)
				go func() {
					d, err := wait(ctx)
					if err == nil && !d.Allowed() {
						err = os.ErrInvalid
					}
					res <- err
				}()
				harness(b, base, id)
				if err := <-res; err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				b.StopTimer()
				_ = os.Remove(base + ".req") // the next request's .req must be new
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e6, "median-ms")
			b.ReportMetric(float64(lat[(len(lat)*99)/100])/1e6, "p99-ms")
		})
	}
}

// harness waits for the .req of request id and answers it.
func harness(b *testing.B, base, id string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fr, err := permission.ReadRequest(base); err == nil && fr.RequestID == id {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("request %s never appeared", id)
		}
		time.Sleep(100 * time.Microsecond)
	}
	tmp := base + ".bench-tmp"
	if err := os.WriteFile(tmp, []byte(`{"outcome":"selected","option_id":"allow"}`), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, base+".req.response"); err != nil {
		b.Fatal(err)
	}
}
