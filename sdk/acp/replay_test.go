package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// replayAgent plays the agent's side of a recorded transcript on stdio:
//
//	-> {json}     a message the client must send: method and id must match,
//	              result/error code must match, and params must contain the
//	              keys given (a run of -> lines may arrive in any order)
//	<- text       a line the agent writes (JSON or not)
//	<= {json}     a message the agent writes with Content-Length framing and
//	              no newline after it
//	!sleep D      pause
//	!stderr text  a line on stderr
//	!exit N       exit with status N
//	# …           a comment
//
// At the end of the script it waits for stdin to close, as real agents do.
func replayAgent(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		return 4
	}
	lines := strings.Split(string(data), "\n")
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "<- "):
			out.WriteString(l[3:] + "\n")
			out.Flush()
		case strings.HasPrefix(l, "<= "):
			body := l[3:]
			fmt.Fprintf(out, "Content-Length: %d\r\n\r\n%s", len(body), body)
			out.Flush()
		case strings.HasPrefix(l, "-> "):
			var want []string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "-> "); i++ {
				want = append(want, lines[i][3:])
			}
			i--
			if err := expect(in, want); err != nil {
				fmt.Fprintf(os.Stderr, "replay %s line %d: %v\n", path, i+1, err)
				return 3
			}
		case strings.HasPrefix(l, "!sleep "):
			d, _ := time.ParseDuration(strings.TrimSpace(l[7:]))
			time.Sleep(d)
		case strings.HasPrefix(l, "!stderr "):
			fmt.Fprintln(os.Stderr, l[8:])
		case strings.HasPrefix(l, "!exit "):
			n, _ := strconv.Atoi(strings.TrimSpace(l[6:]))
			return n
		default:
			fmt.Fprintf(os.Stderr, "replay %s line %d: bad directive %q\n", path, i+1, l)
			return 4
		}
	}
	for in.Scan() {
	}
	return 0
}

// expect reads len(want) messages and matches them, in any order.
func expect(in *bufio.Scanner, want []string) error {
	left := append([]string(nil), want...)
	for range want {
		if !in.Scan() {
			return fmt.Errorf("stdin closed; still expecting %v", left)
		}
		got := bytes.Clone(in.Bytes())
		found := -1
		var why []string
		for j, w := range left {
			err := match(w, got)
			if err == nil {
				found = j
				break
			}
			why = append(why, err.Error())
		}
		if found < 0 {
			return fmt.Errorf("unexpected message %s: %s", got, strings.Join(why, "; "))
		}
		left = append(left[:found], left[found+1:]...)
	}
	return nil
}

func match(want string, got []byte) error {
	var w, g map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return fmt.Errorf("bad expectation %s: %v", want, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if g["jsonrpc"] != "2.0" {
		return fmt.Errorf("jsonrpc is %v", g["jsonrpc"])
	}
	for _, k := range []string{"method", "id", "result"} {
		if wv, ok := w[k]; ok && !reflect.DeepEqual(wv, g[k]) {
			return fmt.Errorf("%s: want %v, got %v", k, wv, g[k])
		}
		if _, ok := w[k]; !ok && k == "id" {
			if _, has := g["id"]; has {
				return fmt.Errorf("want a notification, got id %v", g["id"])
			}
		}
	}
	if we, ok := w["error"].(map[string]any); ok {
		ge, _ := g["error"].(map[string]any)
		if ge == nil || ge["code"] != we["code"] {
			return fmt.Errorf("error: want code %v, got %v", we["code"], g["error"])
		}
	}
	if wp, ok := w["params"].(map[string]any); ok {
		gp, _ := g["params"].(map[string]any)
		for k, v := range wp {
			if !reflect.DeepEqual(v, gp[k]) {
				return fmt.Errorf("params.%s: want %v, got %v", k, v, gp[k])
			}
		}
	}
	return nil
}
