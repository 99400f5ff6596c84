package sessionstate

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestUpdatePersistsAcrossStores(t *testing.T) {
	dir := t.TempDir()
	a := Store[int]{Dir: dir, Name: "x-sessions"}
	if err := a.Update(func(m map[string]int) error { m["s1"] = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	b := Store[int]{Dir: dir, Name: "x-sessions"}
	var got int
	if err := b.Update(func(m map[string]int) error { got = m["s1"]; return nil }); err != nil {
		t.Fatal(err)
	}
	if got != 1 {
		t.Fatalf("a second store saw %d, want 1", got)
	}
	if st, err := os.Stat(filepath.Join(dir, "x-sessions.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", st, err)
	}
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	s := Store[int]{Dir: t.TempDir(), Name: "c"}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Update(func(m map[string]int) error { m["n"]++; return nil })
		}()
	}
	wg.Wait()
	_ = s.Update(func(m map[string]int) error {
		if m["n"] != 20 {
			t.Errorf("n = %d, want 20", m["n"])
		}
		return nil
	})
}

func TestFnErrorWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s := Store[int]{Dir: dir, Name: "e"}
	boom := errors.New("boom")
	if err := s.Update(func(m map[string]int) error { m["x"] = 1; return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "e.json")); !os.IsNotExist(err) {
		t.Fatalf("nothing may be written: %v", err)
	}
}

func TestNoDirKeepsNothing(t *testing.T) {
	s := Store[int]{Name: "none"}
	_ = s.Update(func(m map[string]int) error { m["a"] = 1; return nil })
	_ = s.Update(func(m map[string]int) error {
		if len(m) != 0 {
			t.Fatalf("records without a dir: %v", m)
		}
		return nil
	})
}
