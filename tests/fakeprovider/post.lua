-- wrk script for fakeprovider's healthy-mode benchmark:
--   wrk -t1 -c64 -d5s -s tests/fakeprovider/post.lua http://127.0.0.1:PORT/
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'
wrk.headers["Content-Type"] = "application/json"
