package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

type slowHandler struct {
	mu      sync.Mutex
	handled []string
	delay   time.Duration
}

func (h *slowHandler) HandleRequest(ctx context.Context, method string, _ json.RawMessage) (any, *RPCError) {
	h.mu.Lock()
	h.handled = append(h.handled, method)
	h.mu.Unlock()
	return nil, MethodNotFound(method)
}

func (h *slowHandler) HandleNotification(method string, params json.RawMessage) {
	time.Sleep(h.delay)
	h.mu.Lock()
	h.handled = append(h.handled, method+string(params))
	h.mu.Unlock()
}

func newPipeConn(t *testing.T, h Handler) (*Conn, *io.PipeWriter, *agentproc.LineReader, func()) {
	agentOut, clientIn := io.Pipe()    // agent → client
	clientOutR, clientOut := io.Pipe() // client → agent
	c := NewConn(agentproc.NewLineReader(agentOut, 0), clientOut, h, ConnOptions{})
	return c, clientIn, agentproc.NewLineReader(clientOutR, 0), func() {
		clientIn.Close()
		<-c.Done()
		clientOutR.Close()
	}
}

// An answer is delivered only after every notification sent before it has
// been handled, however slow the handler.
func TestConnAnswerAfterPrecedingNotifications(t *testing.T) {
	h := &slowHandler{delay: 20 * time.Millisecond}
	c, agent, fromClient, stop := newPipeConn(t, h)
	defer stop()
	read := make(chan error, 1)
	go func() { _, err := fromClient.Next(); read <- err }()
	call := c.Go("session/prompt", map[string]string{"sessionId": "s"})
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	go func() {
		for i := 0; i < 5; i++ {
			io.WriteString(agent, `{"jsonrpc":"2.0","method":"n","params":`+itoa(i)+"}\n")
		}
		io.WriteString(agent, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`+"\n")
	}()
	var res struct {
		StopReason string `json:"stopReason"`
	}
	if err := call.Result(&res); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("result %+v, %v", res, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.Join(h.handled, ",") != "n0,n1,n2,n3,n4" {
		t.Errorf("handled before the answer: %v", h.handled)
	}
}

// Requests we do not serve get -32601, whatever their id.
func TestConnUnservedRequest(t *testing.T) {
	c, agent, fromClient, stop := newPipeConn(t, &slowHandler{})
	defer stop()
	_ = c
	go io.WriteString(agent, `{"jsonrpc":"2.0","id":0,"method":"terminal/create","params":{}}`+"\n")
	line, err := fromClient.Next()
	if err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil || string(m.ID) != "0" || m.Error == nil || m.Error.Code != CodeMethodNotFound {
		t.Fatalf("answer %s (%v)", line, err)
	}
}

// When the agent's output ends, pending calls fail with ErrClosed, and new
// ones fail at once.
func TestConnClosedFailsCalls(t *testing.T) {
	c, agent, fromClient, stop := newPipeConn(t, &slowHandler{})
	defer stop()
	go func() {
		for {
			if _, err := fromClient.Next(); err != nil {
				return
			}
		}
	}()
	call := c.Go("initialize", nil)
	agent.Close()
	if err := call.Result(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("pending call: %v", err)
	}
	<-c.Done()
	if err := c.Go("session/new", nil).Result(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Call(ctx, "x", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after close: %v", err)
	}
}
