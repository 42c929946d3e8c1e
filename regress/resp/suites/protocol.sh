# regress/resp/suites/protocol.sh: the RESP parser: malformed requests get Redis's protocol
# error and the connection is closed (what came before is answered, what comes after is not run);
# inline commands (quotes, escapes, LF only); pipelines answered in order, requests split at
# every byte.
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh protocol).

section "protocol errors close the connection"
raw_case "invalid multibulk length" '-ERR Protocol error: invalid multibulk length\r\n<EOF>' 'send:*abc\r\n' read:1 eof:5
raw_case "multibulk length too large" '-ERR Protocol error: invalid multibulk length\r\n<EOF>' 'send:*99999999999\r\n' read:1 eof:5
raw_case "invalid bulk length" '-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:*1\r\n$abc\r\n' read:1 eof:5
raw_case "negative bulk length" '-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:*1\r\n$-1\r\n' read:1 eof:5
raw_case "bulk length beyond the maximum" '-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:*1\r\n$9999999999999\r\n' read:1 eof:5
raw_case "bulk not followed by CRLF" '-ERR Protocol error: bulk not followed by CRLF\r\n<EOF>' 'send:*1\r\n$4\r\nPINGxy' read:1 eof:5
raw_case "expected \$" "-ERR Protocol error: expected '\$', got 'x'\\r\\n<EOF>" 'send:*1\r\nxyz\r\n' read:1 eof:5
raw_case "unbalanced quotes (inline)" '-ERR Protocol error: unbalanced quotes in request\r\n<EOF>' 'send:GET "items:1\r\n' read:1 eof:5
raw_case "unbalanced single quotes (inline)" '-ERR Protocol error: unbalanced quotes in request\r\n<EOF>' "send:ECHO 'abc\\r\\n" read:1 eof:5
raw_case "replies before the error are sent, requests after it are not run" \
    '+PONG\r\n-ERR Protocol error: invalid bulk length\r\n<EOF>' 'send:PING\r\n*1\r\n$x\r\nPING\r\n' read:2 eof:5
raw_case "negative multibulk counts are ignored (as Redis)" '+PONG\r\n+PONG\r\n' 'send:*-5\r\n*0\r\nPING\r\n*-1\r\n*1\r\n$4\r\nPING\r\n' read:2 quiet:200
big_inline=$(head -c 70000 /dev/zero | tr '\0' 'a')
raw_case "too big inline request" '-ERR Protocol error: too big inline request\r\n<EOF>' "send:$big_inline" read:1 eof:5

section "inline commands and pipelining"
raw_case "inline with LF only, quotes and escapes, empty lines" \
    "*2\\r\\n$(bulk "$J1")$(bulk "$J3")\$4\\r\\na b\\t\\r\\n\$3\\r\\nx'y\\r\\n+PONG\\r\\n" \
    "send:MGET items:1 items:3\\n\\r\\n\\nECHO \"a b\\\\x09\"\\r\\nECHO 'x\\\\'y'\\n  PING  \\r\\n" read:4
expected=""
steps=""
for i in $(seq 1 100); do
    expected+="$(bulk "reply-$i")"
    steps+="*2\\r\\n\$4\\r\\nECHO\\r\\n\$$((6 + ${#i}))\\r\\nreply-$i\\r\\n"
done
raw_case "100 pipelined ECHO in one write, replies in order" "$expected" "send:$steps" read:100 quiet:100
expected=""
for i in $(seq 1 50); do expected+="*2\\r\\n$(bulk "$J1")\$-1\\r\\n:1\\r\\n"; done
raw_case "50 pipelined MGET + EXISTS in one write" "$expected" 'repeat:50:MGET items:1 items:0\r\nEXISTS items:3\r\n' read:100
raw_case "requests split at every byte (multibulk)" "*2\\r\\n$(bulk "$J1")$(bulk "$J3")" \
    'slow:*3\r\n$4\r\nMGET\r\n$7\r\nitems:1\r\n$7\r\nitems:3\r\n' read:1
raw_case "requests split at every byte (inline)" "$(bulk "$J3")+PONG\\r\\n" 'slow:GET items:3\r\nPING\r\n' read:2
check "redis-cli reading commands from stdin" '"{\"id\":1,\"value\":\"value 1\"}"
PONG' "$(printf 'GET items:1\nPING\n' | timeout 10 redis-cli -h 127.0.0.1 -p "$RESP_PORT" --no-raw 2>&1)"
