//go:build browser

package hosttest

import (
	"reflect"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserBoardQuestion: the page shows a runtime's question with its
// options as buttons and a field for free text; choosing two options of
// the multi choice, typing the free-text answer and pressing Answer
// answers it (question.response source board) and the card goes.
func TestBrowserBoardQuestion(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, "AVENOR_QUESTIONS=true") // the supervisor's config: its runtimes hear questions
	f := w.startBoardFleet("asks", `question "Which colours?" options=red|blue|green multi=true and="Why?"`+"\nsay \" done\"")
	b := w.startBoardProc("tok-question", "--allow-mutations")
	page := tab(t, newBrowser(t), b.url+"?token="+b.token)
	waitJS(t, page, 20*time.Second, "the runtime row", `document.querySelectorAll("tr.rt").length === 1`)
	click(t, page, rowSel(f.ids[0]))
	waitJS(t, page, 20*time.Second, "the question card",
		`!document.getElementById("question").hidden && document.querySelectorAll("#q-prompts fieldset").length === 2`)
	screenshot(t, page, "question")
	if _, err := chromedp.Run(page, chromedp.Evaluate[bool](`(() => {
		const [colours, why] = document.querySelectorAll("#q-prompts fieldset");
		for (const b of colours.querySelectorAll("button")) if (b.textContent === "red" || b.textContent === "blue") b.click();
		why.querySelector("input").value = "they are calm";
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	click(t, page, "#q-send")
	resp := waitEvent(t, f.events[0], 20*time.Second, "question.response", func(ev event) bool { return ev.name() == "question.response" })
	if resp.str("source") != "board" || !reflect.DeepEqual(resp["answers"], []any{[]any{"red", "blue"}, []any{"they are calm"}}) {
		t.Fatalf("question.response %v; want source board, red+blue and the typed text", resp)
	}
	waitJS(t, page, 20*time.Second, "the card gone and the answer shown",
		`document.getElementById("question").hidden && document.getElementById("transcript").textContent.includes("question answered by board")`)
}
