# libcurl, libpq and libcrypto are loaded on first use (src/lazylib.c).
# libcurl: a request to a closed port (exit 75), and the clear error when
# libcurl.so.4 cannot be loaded (an empty file first on LD_LIBRARY_PATH;
# exit 1).
case_ http-lazy-curl 75 http GET http://127.0.0.1:1/
mkdir -p "$tmp/badlib" && : >"$tmp/badlib/libcurl.so.4"
export LD_LIBRARY_PATH="$tmp/badlib"
case_ http-no-curl 1 http GET http://127.0.0.1:1/
unset LD_LIBRARY_PATH
# libpq loaded on first use: a store on a closed port (exit 1).
sed 's|^store: .*|store: postgres://127.0.0.1:1/x|' examples/surecron.yaml \
  >"$tmp/pg.yaml"
case_ status-lazy-pq 1 status --config "$tmp/pg.yaml"
# libcrypto is loaded only by the targets that send an idempotency key or
# a signature: with libcrypto.so.3 an empty file, a file delivery runs
# (exit 0) and a webhook delivery fails with the clear error (exit 1).
cat >"$tmp/crypto.yaml" <<'YAML'
store: sqlite:./crypto.db
targets:
  archive: {kind: file, path: ./crypto.jsonl}
  hook: {kind: webhook, url_env: SC_VG_HOOK_URL}
schedules:
  f:
    cron: "0 3 * * *"
    targets: [archive]
    tasks:
      - {name: t, command: ["/bin/echo", "hi"]}
  w:
    cron: "0 3 * * *"
    targets: [hook]
    retry: {attempts: 1, backoff: fixed, delay: 1m}
    tasks:
      - {name: t, command: ["/bin/echo", "hi"]}
YAML
: >"$tmp/badlib/libcrypto.so.3"
export LD_LIBRARY_PATH="$tmp/badlib" SC_VG_HOOK_URL=http://127.0.0.1:1/hook
case_ trigger-file-no-crypto 0 trigger --config "$tmp/crypto.yaml" \
  --slot 2026-11-27T03:00:00Z f
case_ run-file-no-crypto 0 run --once --config "$tmp/crypto.yaml"
case_ trigger-hook-no-crypto 0 trigger --config "$tmp/crypto.yaml" \
  --slot 2026-11-27T03:00:00Z w
case_ run-hook-no-crypto 1 run --once --config "$tmp/crypto.yaml"
unset LD_LIBRARY_PATH SC_VG_HOOK_URL
