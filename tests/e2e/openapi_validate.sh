#!/usr/bin/env bash
# End-to-end: the OpenAPI description the daemon serves at /openapi.json is
# docs/openapi.json byte for byte, and a real validator
# (@apidevtools/swagger-parser, pinned by tests/openapi/package-lock.json and
# installed by `make npm-deps` into BUILD/npm; no network here) accepts it as
# OpenAPI 3. That every route is described is test_openapi (unit).
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
mods=$(dirname "$TIDE_BIN")/npm/node_modules
if ! command -v node >/dev/null 2>&1 || [ ! -d "$mods/@apidevtools/swagger-parser" ]; then
    echo "skip: the validator is not installed (make npm-deps, or make test)" >&2
    exit 77
fi
serve_start oa --db "$tmp/t.db" --cluster 2x8 || exit 1
curl -s -D "$tmp/h" -o "$tmp/openapi.json" "$SERVE_URL/openapi.json"
grep -q '^HTTP/1.1 200' "$tmp/h" || fail "GET /openapi.json: $(head -1 "$tmp/h")"
grep -qi '^content-type: application/json' "$tmp/h" || fail "/openapi.json content type"
cmp -s "$tmp/openapi.json" "$TIDE_SRC/docs/openapi.json" || fail "/openapi.json is not docs/openapi.json"
if ! NODE_PATH=$mods node "$TIDE_SRC/tests/openapi/validate.js" "$tmp/openapi.json" >"$tmp/v.out" 2>&1; then
    fail "the validator refused it: $(cat "$tmp/v.out")"
fi
# the validator is not a rubber stamp: a document without responses fails
python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); del d['paths']['/v1/jobs']['get']['responses']
json.dump(d, open(sys.argv[2], 'w'))" "$tmp/openapi.json" "$tmp/bad.json"
NODE_PATH=$mods node "$TIDE_SRC/tests/openapi/validate.js" "$tmp/bad.json" >/dev/null 2>&1 &&
    fail "the validator accepted a document without responses"
serve_stop
cat "$tmp/v.out"
finish openapi_validate
