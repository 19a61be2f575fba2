#!/usr/bin/env bash
# The instance emulator (launcher/cloud/emulator.py): every running instance in the moto server
# on 127.0.0.1:$MOTO_PORT whose user data is a portal bootstrap has that user data run in a
# sandbox under $STATE_DIR/instances/<id>/ with its own IMDSv2 endpoint, so the cloud flow
# needs no hand-started agent. Needs moto (start it first).
source "$(dirname "$0")/common.sh"

PIDFILE="$STATE_DIR/emulator.pid"
ROOT="$STATE_DIR/instances"
emulator_running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "$action" in
  start)
    if ! emulator_running; then
      mkdir -p "$ROOT"
      # The subshell becomes the emulator (exec), so no shell is left holding the caller's
      # stdout (a `make test` whose output is read to its end would wait for it forever) and
      # the pid file names the emulator itself.
      (cd "$REPO_ROOT" && exec setsid "$VENV/bin/python" -m launcher.cloud.emulator run \
        --endpoint "http://127.0.0.1:$MOTO_PORT" --root "$ROOT" \
        >>"$LOG_DIR/emulator.log" 2>&1 </dev/null) &
      echo $! >"$PIDFILE"
    fi
    wait_until 10 emulator_running || die emulator "did not start (see $LOG_DIR/emulator.log)"
    set_env_fact PORTAL_EMULATOR_ROOT "$ROOT"
    say emulator running "instances under $ROOT" ;;
  status)
    if emulator_running; then say emulator running "instances under $ROOT"; else say emulator stopped; exit 1; fi ;;
  stop)
    stop_pidfile "$PIDFILE" 15; say emulator stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
