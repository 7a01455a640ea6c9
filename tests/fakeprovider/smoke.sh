#!/usr/bin/env bash
# tests/fakeprovider/smoke.sh: exercises every mode of fakeprovider with curl, and the
# chain it serves (heads, tags, reorgs, getLogs ranges and limits, Solana commitments).
# usage: smoke.sh [path/to/fakeprovider]   (needs curl, python3, openssl)
# Run it against an ASan build to check for memory errors and leaks.
set -u
BIN=${1:-build/tests/fakeprovider/fakeprovider}
TMP=$(mktemp -d)
FAILS=0
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

start() {  # start NAME ARGS... -> sets URL
    local name=$1; shift
    "$BIN" --listen 127.0.0.1:0 --name "$name" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    PIDS+=($!)
    LAST_PID=$!
    for _ in $(seq 100); do
        grep -q listening "$TMP/$name.out" 2>/dev/null && break
        sleep 0.02
    done
    URL="http://127.0.0.1:$(sed 's/.*://' "$TMP/$name.out")"
}
ok()   { echo "ok   $1"; }
fail() { echo "FAIL $1: $2"; FAILS=$((FAILS + 1)); }
expect() {  # expect NAME HAYSTACK NEEDLE
    if [[ "$2" == *"$3"* ]]; then ok "$1"; else fail "$1" "got: ${2:0:300}"; fi
}
rpc()  { curl -s "$URL" -H 'content-type: application/json' -d "$1"; }
rpci() { curl -s -i "$URL" -H 'content-type: application/json' -d "$1"; }
mode() { curl -s -X POST "$URL/_control/mode" -d "$1" >/dev/null; }
BN='{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'

start eth --block-time-ms 0
expect "blockNumber" "$(rpc "$BN")" '{"jsonrpc":"2.0","id":1,"result":"0xf4240"}'
expect "raw id echo" "$(rpc '{"jsonrpc":"2.0","id":1.50e3,"method":"eth_chainId"}')" '"id":1.50e3,'
expect "batch" "$(rpc '[{"jsonrpc":"2.0","id":"a","method":"eth_chainId"},{"jsonrpc":"2.0","method":"eth_call"},{"jsonrpc":"2.0","id":2,"method":"x_y"}]')" \
    '[{"jsonrpc":"2.0","id":"a","result":"0x1"},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"the method x_y does not exist/is not available"}}]'
expect "parse error" "$(rpc '{"id":')" '"code":-32700,"message":"Parse error"'
expect "empty batch" "$(rpc '[]')" '"code":-32600'
expect "notification" "$(rpci '{"jsonrpc":"2.0","method":"eth_call"}')" 'Content-Length: 0'
expect "connection close" "$(curl -s -i "$URL" -H 'Connection: close' -d "$BN")" 'Connection: close'
expect "411 chunked" "$(curl -s -i "$URL" -H 'Transfer-Encoding: chunked' -d "$BN")" '411 Length Required'
expect "431 huge head" "$(curl -s -i "$URL" -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' a)" -d "$BN")" '431'
expect "413 body" "$(printf 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20000000\r\n\r\n' | curl -s -i --max-time 2 telnet://127.0.0.1:${URL##*:})" '413'
expect "400 garbage http" "$(printf 'HELLO\r\n\r\n' | curl -s --max-time 2 telnet://127.0.0.1:${URL##*:})" '400 Bad Request'
expect "405 get" "$(curl -s -i "$URL/")" '405'
big=$(python3 -c 'import json;print(json.dumps({"jsonrpc":"2.0","id":3,"method":"eth_call","params":[{"data":"0x"+"ab"*3000}]}))')
expect "expect 100-continue" "$(curl -s "$URL" -d "$big")" '"id":3,"result":"0x"'
expect "pipelining" "$(printf "POST / HTTP/1.1\r\nContent-Length: ${#BN}\r\n\r\n%sPOST / HTTP/1.1\r\nContent-Length: ${#BN}\r\nConnection: close\r\n\r\n%s" "$BN" "$BN" | curl -s --max-time 2 telnet://127.0.0.1:${URL##*:} | grep -c '"result"')" '2'
curl -s -X POST "$URL/_control/reset" >/dev/null
curl -s "$URL" "$URL" "$URL" -d "$BN" >/dev/null
# 3 keep-alive requests on one connection + 1 for the stats call itself
expect "keep-alive" "$(curl -s "$URL/_control/stats")" '"connections_total":2,'

mode '{"mode":"http429","retry_after":2,"count":2}'
r=$(rpci '{"jsonrpc":"2.0","id":"q","method":"eth_call"}')
expect "http429" "$r" 'Retry-After: 2'
expect "http429 body" "$r" '{"jsonrpc":"2.0","id":"q","error":{"code":429,"message":"Too Many Requests"}}'
rpc "$BN" >/dev/null
expect "count used up" "$(rpci "$BN")" '200 OK'
mode '{"mode":"http429"}'
expect "http429 no retry-after" "$(rpci "$BN" | grep -c Retry-After)" '0'
mode '{"mode":"rpc_limit","backoff":5}'
expect "rpc_limit batch" "$(rpc "[$BN,$BN]")" '[{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"daily request count exceeded, request rate limited","data":{"backoff_seconds":5}}},{"jsonrpc":"2.0","id":1,"error"'
for s in 402 500 502 503 504; do
    mode "{\"mode\":\"http$s\"}"
    expect "http$s" "$(rpci "$BN")" "HTTP/1.1 $s"
done
mode '{"mode":"reset"}'
curl -s "$URL" -d "$BN" >/dev/null; expect "reset" "$?" '56'
mode '{"mode":"hang"}'
curl -s --max-time 0.5 "$URL" -d "$BN" >/dev/null; expect "hang" "$?" '28'
mode '{"mode":"accept_hang","count":1}'
curl -s --max-time 0.5 "$URL" -d "$BN" >/dev/null; expect "accept_hang" "$?" '28'
expect "accept_hang used up" "$(rpc "$BN")" '"result"'
mode '{"mode":"slow","delay_ms":300}'
t=$(curl -s -o /dev/null -w '%{time_total}' "$URL" -d "$BN")
expect "slow" "$(python3 -c "print('late' if $t >= 0.29 else 'early $t')")" 'late'
mode '{"mode":"slow_body","delay_ms":500}'
r=$(curl -s -w ' %{time_total}' "$URL" -d '{"jsonrpc":"2.0","id":5,"method":"eth_getLogs"}')
expect "slow_body complete" "$r" '"removed":false}]}'
expect "slow_body timing" "$(python3 -c "print('late' if ${r##* } >= 0.45 else 'early')")" 'late'
mode '{"mode":"garbage"}'
expect "garbage" "$(rpc "$BN")" '<html>oops</html>'
mode '{"mode":"truncated"}'
curl -s "$URL" -d "$BN" >/dev/null; expect "truncated" "$?" '18'
mode '{"mode":"huge","size":1048576}'
expect "huge" "$(rpc "$BN" | wc -c)" '1048612'
mode '{"mode":"wrong_id"}'
expect "wrong_id num" "$(rpc "$BN")" '"id":987654321,'
expect "wrong_id str" "$(rpc '{"jsonrpc":"2.0","id":"abc","method":"eth_chainId"}')" '"id":"x-abc",'
mode '{"mode":"rpc_error","code":3,"message":"execution reverted","data":"0x08c379a0"}'
expect "rpc_error" "$(rpc "$BN")" '{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"execution reverted","data":"0x08c379a0"}}'
mode '{"mode":"http429","code":-32005,"message":"project ID request rate exceeded","data":{"backoff_seconds":30.0}}'
r=$(rpci '{"jsonrpc":"2.0","id":7,"method":"eth_call"}')
expect "http429 rpc body" "$r" '{"jsonrpc":"2.0","id":7,"error":{"code":-32005,"message":"project ID request rate exceeded","data":{"backoff_seconds":30}}}'
expect "http429 rpc body json" "$r" 'Content-Type: application/json'
mode '{"mode":"http503","code":-32000,"message":"already known"}'
r=$(rpci "$BN")
expect "http503 rpc body" "$r" '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"already known"}}'
expect "http503 rpc body status" "$r" 'HTTP/1.1 503'
mode '{"mode":"strict_id"}'
expect "strict_id fraction" "$(rpc '{"jsonrpc":"2.0","id":1.5,"method":"eth_chainId"}')" '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}'
expect "strict_id negative" "$(rpc '{"jsonrpc":"2.0","id":-1,"method":"eth_chainId"}')" '"id":null,"error":{"code":-32600'
expect "strict_id u64" "$(rpc '{"jsonrpc":"2.0","id":18446744073709551615,"method":"eth_chainId"}')" '"id":18446744073709551615,"result":"0x1"'
expect "strict_id string" "$(rpc '{"jsonrpc":"2.0","id":"1.5","method":"eth_chainId"}')" '"id":"1.5","result":"0x1"'
expect "strict_id batch member" "$(rpc '[{"jsonrpc":"2.0","id":1e3,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}]')" '[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}},{"jsonrpc":"2.0","id":2,"result":"0x1"}]'
curl -s -X POST "$URL/_control/reset" >/dev/null
mode '{"mode":"ok"}'
rpc "$BN" >/dev/null; sleep 0.2; rpc "$BN" >/dev/null
expect "arrivals_ms" "$(curl -s "$URL/_control/stats" | python3 -c 'import json,sys;a=json.load(sys.stdin)["arrivals_ms"];print("ok" if len(a)==2 and 150<=a[1]-a[0]<2000 else a)')" 'ok'
mode '{"mode":"rpc_error","code":-32600,"message":"Invalid request","id":null}'
expect "rpc_error id" "$(rpc "$BN")" '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}'
mode '{"mode":"lag","behind":100}'
expect "lag" "$(rpc "$BN")" '"result":"0xf41dc"'
mode '{"mode":"hang","method":"eth_sendRawTransaction","count":1}'
expect "method filter passes others" "$(rpc "$BN")" '"result"'
curl -s --max-time 0.5 "$URL" -d '{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0xdeadbeef"]}' >/dev/null
expect "method filter hangs match" "$?" '28'
expect "hung send still lands" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["0x4142710b9b4caaeb000b8e5de271bbebac7f509aab2f5e61d1ed1958bfe6d583"]}')" '"status":"0x1"'
expect "bad mode rejected" "$(curl -s -i -X POST "$URL/_control/mode" -d '{"mode":"nope"}')" '400'
expect "bad option rejected" "$(curl -s -X POST "$URL/_control/mode" -d '{"mode":"ok","colour":1}')" 'unknown option'
st=$(curl -s "$URL/_control/stats")
expect "stats sent_raw" "$st" '"sent_raw":["0x4142710b9b4caaeb000b8e5de271bbebac7f509aab2f5e61d1ed1958bfe6d583"]'
expect "stats mode back to ok" "$st" '"mode":{"mode":"ok"'
curl -s -X POST "$URL/_control/reset" >/dev/null
expect "reset counters" "$(curl -s "$URL/_control/stats")" '"requests":0,"calls":0,"methods":{},"sent_raw":[],"arrivals_ms":[]'
kill -TERM "$LAST_PID"; wait "$LAST_PID"; expect "SIGTERM exits 0" "$?" '0'

start sol --chain solana --block 5000 --block-time-ms 0
expect "getSlot" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getSlot"}')" '"result":5000}'
expect "getBalance" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["x"]}')" '"result":{"context":{"apiVersion":"1.18.22","slot":5000},"value":1000000000}}'
expect "getLatestBlockhash" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getLatestBlockhash"}')" '"lastValidBlockHeight":5150}}}'
tx=$(python3 -c 'import base64;print(base64.b64encode(bytes([1])+bytes(range(1,65))+bytes(40)).decode())')
sig=$(rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sendTransaction\",\"params\":[\"$tx\",{\"encoding\":\"base64\"}]}" | python3 -c 'import json,sys;print(json.load(sys.stdin)["result"])')
expect "sendTransaction sig" "$(python3 -c "
a='123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';n=int.from_bytes(bytes(range(1,65)),'big');s=''
while n: n,r=divmod(n,58); s=a[r]+s
print(s)")" "$sig"
expect "getSignatureStatuses" "$(rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSignatureStatuses\",\"params\":[[\"$sig\",\"zzz\"]]}")" '"value":[{"slot":5000,"confirmations":null,"err":null,"status":{"Ok":null},"confirmationStatus":"finalized"},null]}}'
many=$(python3 -c "print(','.join(['\"zzz\"']*257))")
expect "getSignatureStatuses max 256" "$(rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSignatureStatuses\",\"params\":[[$many]]}")" '"code":-32602,"message":"Too many inputs provided; max 256"'
many=$(python3 -c "print(','.join(['\"zzz\"']*256))")
expect "getSignatureStatuses 256 is fine" "$(rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSignatureStatuses\",\"params\":[[$many]]}")" 'null,null]}}'
expect "getVersion" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getVersion"}')" '"solana-core":"1.18.22"'
kill -TERM "$LAST_PID"; wait "$LAST_PID"

# ---- the chain: head on command, safe/finalized, reorgs, getLogs ranges, lies ----
chain() { curl -s -X POST "$URL/_control/chain" -d "$1"; }
field() { python3 -c "import json,sys;print(json.load(sys.stdin)$1)"; }
start chain --block 1000 --block-time-ms 0 --chain-id 0x2105 --safe-depth 2 --finalized-depth 5 \
    --logs-per-block 2 --logs-limit 100 --logs-vendor quicknode
expect "chain id" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}')" '"result":"0x2105"'
expect "chain status" "$(curl -s "$URL/_control/chain")" '{"ok":true,"head":1000,"safe":998,"finalized":995,"forks":0,"hash":"0x'
expect "advance on command" "$(chain '{"advance":10}')" '"head":1010,'
expect "head on command" "$(chain '{"head":1020}')" '"head":1020,'
expect "blockNumber follows" "$(rpc "$BN")" '"result":"0x3fc"'
expect "safe tag" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["safe",false]}')" '"number":"0x3fa"'
expect "finalized tag" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["finalized",false]}')" '"number":"0x3f7"'
expect "above the head is null" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x3fd",false]}')" '"result":null'
old=$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x3fa",false]}' | field '["result"]["hash"]')
keep=$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x3f9",false]}' | field '["result"]["hash"]')
expect "by hash" "$(rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBlockByHash\",\"params\":[\"$old\",false]}")" '"number":"0x3fa"'
expect "reorg on command" "$(chain '{"reorg":3}')" '"forks":1,'
new=$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x3fa",false]}')  # 1018..1020 replaced
expect "reorged block has a new hash" "$(echo "$new" | field '["result"]["hash"]!="'"$old"'"')" 'True'
expect "reorged block's parent is the kept block" "$(echo "$new" | field '["result"]["parentHash"]')" "$keep"
expect "old hash is gone" "$(rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBlockByHash\",\"params\":[\"$old\",false]}")" '"result":null'
expect "kept block kept its hash" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x3f9",false]}' | field '["result"]["hash"]')" "$keep"
expect "reorg deeper than the head refused" "$(curl -s -i -X POST "$URL/_control/chain" -d '{"reorg":5000}')" '400'
logs=$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x3e8","toBlock":"0x3ea","address":"0x2222222222222222222222222222222222222222"}]}')
expect "logs per block, in block order" "$(echo "$logs" | field '["result"]' | python3 -c 'import ast,sys;l=ast.literal_eval(sys.stdin.read());print([(x["blockNumber"],x["logIndex"]) for x in l])')" "[('0x3e8', '0x0'), ('0x3e8', '0x1'), ('0x3e9', '0x0'), ('0x3e9', '0x1'), ('0x3ea', '0x0'), ('0x3ea', '0x1')]"
expect "logs by blockHash" "$(rpc "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getLogs\",\"params\":[{\"blockHash\":\"$keep\"}]}" | field '["result"][1]["blockHash"]')" "$keep"
expect "logs of a reorged block follow its new hash" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x3fa","toBlock":"0x3fa"}]}' | field '["result"][0]["blockHash"]')" "$(echo "$new" | field '["result"]["hash"]')"
r=$(rpci '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x0","toBlock":"0x3fc"}]}')
expect "range limit: quicknode's status" "$r" 'HTTP/1.1 413'
expect "range limit: quicknode's words" "$r" '{"jsonrpc":"2.0","id":1,"error":{"code":-32614,"message":"eth_getLogs is limited to a 100 range"}}'
expect "range past the head" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x3fc","toBlock":"0x3fd"}]}')" '"code":-32602,"message":"block range extends beyond current head block"'
expect "range backwards" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x3fc","toBlock":"0x3fb"}]}')" '"message":"invalid block range params"'
expect "exactly the limit passes" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x399","toBlock":"0x3fc"}]}' | field '["result"].__len__()')" '200'
mode '{"mode":"lie","method":"eth_getBalance,eth_call"}'
expect "lie: balance" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x1","latest"]}')" '"result":"0x1bc16d674ec80001"'
expect "lie: empty call data" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{}]}')" '"result":"0x00"'
expect "lie: other methods honest" "$(rpc "$BN")" '"result":"0x3fc"'
mode '{"mode":"lag","behind":4}'
expect "lag: head - n" "$(rpc "$BN")" '"result":"0x3f8"'
mode '{"mode":"ok"}'
kill -TERM "$LAST_PID"; wait "$LAST_PID"
for v in alchemy:'"code":-32600,"message":"You can make eth_getLogs requests with up to a 10 block range. Based on your parameters, this block range should work: [0x0, 0x9]"' \
         infura:'"code":-32602,"message":"range 20 exceeds limit of 10"' \
         ankr:'"code":-32600,"message":"block range is too wide"' \
         publicnode:'"code":-32000,"message":"exceed maximum block range: 10"' \
         geth:'"code":-32602,"message":"exceed maximum block range 10"' \
         erigon:'"code":-32602,"message":"query block range exceeds server limit, narrow your filter: 10"' \
         reth:'"code":-32602,"message":"query exceeds max block range 10"'; do
    start "logs-${v%%:*}" --block 100 --block-time-ms 0 --logs-per-block 1 --logs-limit 10 --logs-vendor "${v%%:*}"
    expect "range limit: ${v%%:*}" "$(rpci '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x0","toBlock":"0x14"}]}')" "${v#*:}"
    kill -TERM "$LAST_PID"; wait "$LAST_PID"
done

start solchain --chain solana --block 5000 --block-time-ms 0 --safe-depth 2 --finalized-depth 32 --genesis-hash EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG
expect "genesis hash" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getGenesisHash"}')" '"result":"EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"'
expect "slot: finalized by default" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getSlot"}')" '"result":4968}'
expect "slot: processed" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[{"commitment":"processed"}]}')" '"result":5000}'
expect "slot: confirmed" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[{"commitment":"confirmed"}]}')" '"result":4998}'
expect "context slot at the commitment" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["x",{"commitment":"confirmed"}]}')" '"slot":4998}'
expect "minContextSlot reached" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["x",{"commitment":"processed","minContextSlot":5000}]}')" '"value":1000000000}'
expect "minContextSlot not reached: -32016" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["x",{"commitment":"confirmed","minContextSlot":4999}]}')" '{"jsonrpc":"2.0","id":1,"error":{"code":-32016,"message":"Minimum context slot has not been reached","data":{"contextSlot":4998}}}'
expect "slot on command" "$(chain '{"advance":2}')" '"head":5002,"safe":5000,"finalized":4970,'
expect "minContextSlot reached later" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[{"commitment":"confirmed","minContextSlot":4999}]}')" '"result":5000}'
mode '{"mode":"lie","method":"getSlot"}'
expect "lie: slot" "$(rpc '{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[{"commitment":"processed"}]}')" '"result":5003}'
kill -TERM "$LAST_PID"; wait "$LAST_PID"

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 1 -subj /CN=localhost >/dev/null 2>&1
start tls --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem"
URL=${URL/http:/https:}
expect "tls 1.3" "$(curl -sk --tlsv1.3 "$URL" "$URL" -d "$BN")" '"result":"0xf4240"}{"jsonrpc"'
expect "tls 1.2" "$(curl -sk --tlsv1.2 --tls-max 1.2 "$URL" -d "$BN")" '"result"'
expect "tls big" "$(curl -sk "$URL" -d "$big")" '"id":3,"result":"0x"'
mode() { curl -sk -X POST "$URL/_control/mode" -d "$1" >/dev/null; }
mode '{"mode":"huge","size":3000000}'
expect "tls huge" "$(curl -sk "$URL" -d "$BN" | wc -c)" '3000036'
mode '{"mode":"slow_body","delay_ms":200}'
expect "tls slow_body" "$(curl -sk "$URL" -d "$BN")" '"result"'
kill -TERM "$LAST_PID"; wait "$LAST_PID"; expect "tls exits 0" "$?" '0'

for f in "$TMP"/*.err; do
    if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$f"; then fail "sanitizer" "$(cat "$f")"; fi
done
echo "$FAILS failure(s)"
exit $((FAILS > 0))
