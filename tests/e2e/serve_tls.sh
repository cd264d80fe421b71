#!/usr/bin/env bash
# End-to-end: HTTPS and the listen-address rules of `tide serve` (docs/serve.md,
# "TLS and exposure").
#  - a test CA and a server certificate (openssl); --tls-cert/--tls-key serve
#    HTTPS: curl with the CA gets /healthz and submits; curl without the CA
#    refuses the certificate; plain HTTP to the port gets no API answer;
#  - a key that does not match the certificate, a missing file, only one of
#    the two: refused at start;
#  - a non-loopback --listen needs --tokens, and TLS or --insecure; the check
#    parses the address (127.0.0.1.example.invalid is not loopback);
#  - a token shorter than 16 characters is refused.
# Nothing listens beyond loopback: the accepted non-loopback cases use the
# TEST-NET address 192.0.2.1, which the checks pass and the bind then refuses.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built, no openssl).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
command -v openssl >/dev/null || { echo "skip: openssl is needed" >&2; exit 77; }
T=$TIDE_BIN
cd "$tmp" || exit 1
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=tide test CA" 2>/dev/null &&
    openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj "/CN=localhost" 2>/dev/null &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >ext &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
        -extfile ext 2>/dev/null || { fail "openssl could not make the test CA"; finish serve_tls; }

# --- HTTPS
"$T" serve --db "$tmp/tls.db" --cluster 2x8 --listen 127.0.0.1:0 --tls-cert srv.pem \
    --tls-key srv.key >tls.out 2>tls.log &
pid=$!
SERVE_PIDS+=("$pid")
poll_until 15 grep -q '^listening on https://' tls.out || fail "no 'listening on https://': $(cat tls.out tls.log)"
url=$(sed -n 's/^listening on \(https:[^ ]*\).*/\1/p' tls.out)
out=$(curl -s --max-time 10 --cacert ca.pem "$url/healthz")
grep -q '"ok":true' <<<"$out" || fail "https /healthz with the CA: $out"
st=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert ca.pem -X POST \
    -H 'Content-Type: application/json' -d '{"job_id":"tls-1","priority":2,"gpus":8,"duration_s":60}' "$url/v1/jobs")
[ "$st" = 201 ] || fail "https submit: HTTP $st"
curl -s --max-time 10 "$url/healthz" >/dev/null 2>&1
[ $? = 60 ] || fail "curl without the CA did not refuse the certificate (exit 60 expected)"
plain=$(curl -s --max-time 5 "http://${url#https://}/healthz" 2>/dev/null)
grep -q '"ok"' <<<"$plain" && fail "plain HTTP on the TLS port got an API answer"
serve_stop "$pid"

# --- bad TLS material
"$T" serve --db "$tmp/x.db" --cluster 2x8 --listen 127.0.0.1:0 --tls-cert srv.pem \
    --tls-key ca.key >bad.out 2>&1 && fail "a key that does not match the certificate was accepted"
grep -qi 'tls-key' bad.out || fail "mismatched key: message does not name --tls-key: $(cat bad.out)"
"$T" serve --db "$tmp/x.db" --cluster 2x8 --listen 127.0.0.1:0 --tls-cert nonesuch.pem \
    --tls-key srv.key >bad.out 2>&1 && fail "a missing certificate was accepted"
grep -q 'nonesuch.pem' bad.out || fail "missing cert: $(cat bad.out)"
"$T" serve --db "$tmp/x.db" --cluster 2x8 --tls-cert srv.pem >bad.out 2>&1
[ $? = 2 ] || fail "--tls-cert without --tls-key is not a usage error"

# --- exposure rules (nothing binds beyond loopback)
printf 'abcdefghijklmnop-admin ops admin\n' >tokens
printf 'short ops admin\n' >short
"$T" serve --db "$tmp/x.db" --cluster 2x8 --listen 127.0.0.1.example.invalid:0 >bad.out 2>&1
[ $? = 2 ] && grep -q 'not a loopback address' bad.out ||
    fail "127.0.0.1.example.invalid passed as loopback: $(cat bad.out)"
"$T" serve --db "$tmp/x.db" --cluster 2x8 --listen 192.0.2.1:0 --tokens tokens >bad.out 2>&1
[ $? = 2 ] && grep -q 'tls-cert' bad.out || fail "non-loopback without TLS: $(cat bad.out)"
"$T" serve --db "$tmp/x.db" --cluster 2x8 --listen 192.0.2.1:0 --tokens tokens --insecure >bad.out 2>&1
grep -q 'cannot listen on 192.0.2.1' bad.out || fail "--insecure did not pass the check: $(cat bad.out)"
"$T" serve --db "$tmp/x.db" --cluster 2x8 --listen 192.0.2.1:0 --tokens tokens \
    --tls-cert srv.pem --tls-key srv.key >bad.out 2>&1
grep -q 'cannot listen on 192.0.2.1' bad.out || fail "TLS did not pass the check: $(cat bad.out)"
"$T" serve --db "$tmp/x.db" --cluster 2x8 --listen 127.0.0.1:0 --tokens short >bad.out 2>&1 &&
    fail "a 5-character token was accepted"
grep -q 'shorter than 16' bad.out || fail "short token: $(cat bad.out)"
"$T" serve --help | grep -q -- '--tls-cert' || fail "serve --help lacks --tls-cert"
finish serve_tls
