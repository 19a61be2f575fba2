#!/usr/bin/env bash
# Redis on 127.0.0.1:6379, nothing persisted (a broker and cache for tests, not a store).
source "$(dirname "$0")/common.sh"

redis_ready() { redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG; }

case "$action" in
  start)
    ensure_packages redis-server
    if ! redis_ready; then
      mkdir -p /var/lib/redis /var/log/redis
      redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no \
        --dir /var/lib/redis --logfile "$LOG_DIR/redis.log" --pidfile "$STATE_DIR/redis.pid"
    fi
    wait_until 15 redis_ready || die redis "not answering PING on 127.0.0.1:6379"
    set_env_fact CELERY_BROKER_URL "redis://127.0.0.1:6379/0"
    say redis running "127.0.0.1:6379" ;;
  status)
    if redis_ready; then say redis running "127.0.0.1:6379"; else say redis stopped; exit 1; fi ;;
  stop)
    redis_ready && redis-cli -h 127.0.0.1 -p 6379 shutdown nosave >/dev/null 2>&1 || true
    say redis stopped ;;
  *) echo "usage: $0 start|status|stop" >&2; exit 2 ;;
esac
