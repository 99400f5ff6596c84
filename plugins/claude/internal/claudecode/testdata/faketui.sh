#!/usr/bin/env bash
# A stand-in TUI for the terminal launchers' tests (terminal_test.go): it
# turns on bracketed paste, reads raw keys and, on Enter, prints the line it
# got with ESC and LF made visible. "q" + Enter exits; FAKETUI_IGNORE_TERM=1
# ignores SIGTERM (so kill must escalate); FAKETUI_CHILD=1 starts a sleeping
# child in its process group.
[ "$FAKETUI_IGNORE_TERM" = 1 ] && trap '' TERM
[ "$FAKETUI_CHILD" = 1 ] && { sleep 300 & }
printf '\033[?2004h'
stty raw -echo
printf '❯ ─── READY term=%s secret=%s size=%s\r\n' "$TERM" "$FAKETUI_SECRET" "$(stty size)"
buf=""
# One byte at a time through head and od: bash's own read turns CR into LF.
while c=$(head -c1 | od -An -tx1 | tr -d ' \n'); [ -n "$c" ]; do
	case "$c" in
	1b) buf+="<ESC>" ;;
	0d)
		[ "$buf" = q ] && exit 0
		printf 'line: %s\r\n' "$buf"
		buf=""
		;;
	0a) buf+="<LF>" ;;
	*) buf+=$(printf "\\x$c") ;;
	esac
done
