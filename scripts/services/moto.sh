#!/usr/bin/env bash
# moto server on 127.0.0.1:$MOTO_PORT: the AWS API offline (EC2, S3) for boto3 in tests.
source "$(dirname "$0")/common.sh"

PIDFILE="$STATE_DIR/moto.pid"
# Its dashboard (a static page), not /moto-api/data.json: that one serialises every backend's
# state, is slow once S3 holds checkpoints, and answered 500 after a `make run` cloud walk, so a
# running moto was reported "not answering" and `make test` stopped.
moto_ready() { curl -fsS -o /dev/null "http://127.0.0.1:$MOTO_PORT/moto-api/" 2>/dev/null; }

case "$action" in
  start)
    [[ -x "$VENV/bin/moto_server" ]] || die moto "$VENV/bin/moto_server missing: install requirements-dev.txt into $VENV"
    if ! moto_ready; then
      setsid "$VENV/bin/moto_server" -H 127.0.0.1 -p "$MOTO_PORT" >>"$LOG_DIR/moto.log" 2>&1 </dev/null &
      echo $! >"$PIDFILE"
    fi
    wait_until 30 moto_ready || die moto "not answering on 127.0.0.1:$MOTO_PORT (see $LOG_DIR/moto.log)"
    set_env_fact AWS_ENDPOINT_URL "http://127.0.0.1:$MOTO_PORT"
    say moto running "http://127.0.0.1:$MOTO_PORT" ;;
  status)
    if moto_ready; then say moto running "http://127.0.0.1:$MOTO_PORT"; else say moto stopped; exit 1; fi ;;
  stop)
    stop_pidfile "$PIDFILE" 10; say moto stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
