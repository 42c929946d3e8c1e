# regress/resp/suites/keys.sh: rows keyed by primary keys beyond integers — text, varchar,
# character(n), uuid, and composite keys — are named by their key's canonical text, read byte
# for byte as SQL has them, walked by SCAN/KEYS in that same form, and written through SQL.
#   cold, warm  MGET of each key type equals row_to_json, a miss first, a hit then (stats)
#   reads       GET / MGET / EXISTS / HGET / HMGET / HGETALL / STRLEN / TYPE for every key type;
#               text keys with ':' and '\', character(n) keys without their trailing blanks
#   spellings   non-canonical ids name no key: nil (upper-case uuid, leading zeros, wrong number
#               of columns, bad escapes, values out of the column's range, character(n) with
#               trailing blanks, NUL, invalid UTF-8)
#   SCAN, KEYS  the keys SQL computes (escaping built with replace()), each once; every key
#               SCAN returns reads back its row; MATCH with an escaped '\'; SCAN COUNT 1 over
#               keys longer than the 240 key bytes a cursor position keeps
#   freshness   UPDATE of a non-key and of a key column, DELETE, INSERT of a key read as nil
#               before (a negative entry): each COMMIT visible to the next read
#   writes      SET / HSET / HDEL / HINCRBY / DEL on text, character(n), uuid and composite keys,
#               checked through SQL; key columns in the object must equal the key; invalid keys
#               refused; another spelling of a key (trailing blanks, upper-case uuid, leading
#               zeros) refused by every write, naming the canonical text; MULTI / EXEC and
#               WATCH on a composite key
# Sourced by regress/resp/redis_cli.sh (alone: regress/resp/redis_cli.sh keys). Creates and
# drops its own tables (ktext, kvar, kchar, kuuid with prefix uid, lines, acct, k3, klong), a
# view and a role (regress_resp_keywriter).

PW_KEYWRITER='kwr-Pw-6Tn3-xyzzy'
keys_log_start=$(log_size)

section "key types: fixtures"
setup=$(sql "$(cat <<'SQL'
CREATE TABLE ktext (k text PRIMARY KEY, v text, n integer);
INSERT INTO ktext VALUES
  ('alpha', 'plain', 1), ('a:b', 'one colon', 2), ('a:b:c', 'two colons', 3), (':lead', 'leading colon', 4),
  ('trail:', 'trailing colon', 5), ('back\slash', 'a backslash', 6), ('a\:b', 'backslash colon', 7),
  ('sp ace', 'a blank', 8), ('trail ', 'trailing blank', 9), ('ünï', 'latin-1 letters', 10),
  ('日本', 'CJK', 11), ('-0', 'minus zero', 12), ('007', 'leading zeros', 13), ('', 'empty key', 14),
  ('quote"s', 'a quote', 15), ('x', NULL, NULL);
SELECT local_cache.enable('ktext');

CREATE TABLE kvar (k varchar(10) PRIMARY KEY, v text);
INSERT INTO kvar VALUES ('short', 's'), ('ten chars!', 'exactly ten'), ('a:b', 'colon');
SELECT local_cache.enable('kvar');

CREATE TABLE kchar (code char(5) PRIMARY KEY, v text);
INSERT INTO kchar VALUES ('ab', 'two letters'), ('abcde', 'five letters'), ('a b', 'inner blank'),
  (' x', 'leading blank'), ('', 'all blanks'), ('c:d', 'colon');
SELECT local_cache.enable('kchar');

CREATE TABLE kuuid (id uuid PRIMARY KEY, v text);
INSERT INTO kuuid VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'a0ee'),
  ('00000000-0000-0000-0000-000000000000', 'nil uuid'), ('ffffffff-ffff-ffff-ffff-ffffffffffff', 'max uuid'),
  ('123e4567-e89b-12d3-a456-426614174000', '123e');
SELECT local_cache.enable('kuuid', resp_prefix => 'uid');

CREATE TABLE lines (order_id bigint, line_no integer, sku text, qty integer, PRIMARY KEY (order_id, line_no));
INSERT INTO lines VALUES (7, 1, 'apple', 2), (7, 2, 'pear', 1), (7, 10, 'plum', 5), (70, 1, 'seventy', 1),
  (-3, 0, 'negative', 0), (9223372036854775807, 2147483647, 'max', 1),
  (-9223372036854775808, -2147483648, 'min', 1);
SELECT local_cache.enable('lines');

CREATE TABLE acct (tenant text, n integer, v text, PRIMARY KEY (tenant, n));
INSERT INTO acct VALUES ('a:b', 3, 'colon'), ('x\y', 1, 'backslash'), ('plain', 1, 'plain'),
  ('', 2, 'empty tenant'), ('a\:b', 4, 'backslash colon'), ('end\', 5, 'trailing backslash'),
  ('::', 6, 'two colons'), ('a', 3, 'just a'), ('ü:日本', 1, 'utf-8'), ('sp ace ', 8, 'blanks'),
  (repeat('t', 300), 1, 'long tenant');
SELECT local_cache.enable('acct');

CREATE TABLE k3 (region char(3), id uuid, ver smallint, note text, PRIMARY KEY (region, id, ver));
INSERT INTO k3 VALUES ('eu', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1, 'eu one'),
  ('eu', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 2, 'eu two'),
  ('a:', '00000000-0000-0000-0000-000000000000', -1, 'colon region'),
  ('us\', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 32767, 'backslash region');
SELECT local_cache.enable('k3');

-- Keys around the 240 key bytes a SCAN cursor position keeps: 239, 240, 241, 300, 1000 and
-- 2001 bytes, some long ones in a row, the last key of the table a long one.
CREATE TABLE klong (k text PRIMARY KEY, v integer);
INSERT INTO klong VALUES ('a', 1), ('b' || repeat('x', 238), 239), ('c' || repeat('x', 239), 240),
  ('d' || repeat('x', 240), 241), ('e' || repeat('x', 299), 300), ('f' || repeat('y', 999), 1000),
  ('g', 1), ('h' || repeat('z', 2000), 2001);
SELECT local_cache.enable('klong');

-- Every key of these tables in its canonical text, computed here (not by the extension), with
-- the row's JSON: character(n) without trailing blanks, uuid as uuid_out writes it, composite
-- keys' text columns with '\' and ':' escaped by '\'.
CREATE VIEW regress_keys_v AS
      SELECT 'ktext:' || k AS key, row_to_json(t)::text AS json FROM ktext t
UNION ALL SELECT 'kvar:' || k, row_to_json(t)::text FROM kvar t
UNION ALL SELECT 'kchar:' || rtrim(code::text, ' '), row_to_json(t)::text FROM kchar t
UNION ALL SELECT 'uid:' || id::text, row_to_json(t)::text FROM kuuid t
UNION ALL SELECT 'lines:' || order_id || ':' || line_no, row_to_json(t)::text FROM lines t
UNION ALL SELECT 'acct:' || replace(replace(tenant, '\', '\\'), ':', '\:') || ':' || n, row_to_json(t)::text FROM acct t
UNION ALL SELECT 'k3:' || replace(replace(rtrim(region::text, ' '), '\', '\\'), ':', '\:') || ':' || id || ':' || ver,
                 row_to_json(t)::text FROM k3 t
UNION ALL SELECT 'klong:' || k, row_to_json(t)::text FROM klong t;

GRANT SELECT ON ktext, kvar, kchar, kuuid, lines, acct, k3, klong TO regress_resp_reader;
SQL
)
CREATE ROLE regress_resp_keywriter LOGIN PASSWORD '$PW_KEYWRITER';
GRANT SELECT, INSERT, UPDATE, DELETE ON ktext, kvar, kchar, kuuid, lines, acct, k3, klong TO regress_resp_keywriter;" 2>&1)
check "the tables keyed by text, varchar, char(5), uuid and composite keys are enabled" "" \
    "$(printf '%s\n' "$setup" | grep -v '^$' || true)"
check "their prefixes: the table's name unless resp_prefix says otherwise" \
    "acct=acct k3=k3 kchar=kchar klong=klong ktext=ktext kuuid=uid kvar=kvar lines=lines" \
    "$(sql "SELECT string_agg(relid::text || '=' || resp_prefix, ' ' ORDER BY relid::text) FROM local_cache.tables WHERE relid::text IN ('ktext', 'kvar', 'kchar', 'kuuid', 'lines', 'acct', 'k3', 'klong')")"

# sq TEXT: TEXT as a SQL literal (dollar-quoted: no escaping of ' or \)
sq() { printf '$q_$%s$q_$' "$1"; }
# kjson KEY: the JSON of the row SQL says KEY names (nothing if none)
kjson() { sql "SELECT json FROM regress_keys_v WHERE key = $(sq "$1")"; }
# kwant KEY: the escaped bulk reply of the row KEY names; a marker that matches no reply if SQL
# has no such row (so that a fixture mistake cannot turn into an expected nil)
kwant() {
    local json
    json=$(kjson "$1")
    if [[ -n "$json" ]]; then bulk "$json"; else printf '<SQL has no row for %s>' "$1"; fi
}
# krow TABLE CONDITION: the escaped bulk reply of the row of TABLE t WHERE CONDITION
krow() {
    local json
    json=$(sql "SELECT row_to_json(t)::text FROM $1 t WHERE $2")
    if [[ -n "$json" ]]; then bulk "$json"; else printf '<SQL has no row in %s where %s>' "$1" "$2"; fi
}
# kstats TABLE: "hits misses negative_hits" of the table in local_cache.stats
kstats() { sql "SELECT hits || ' ' || misses || ' ' || negative_hits FROM local_cache.stats WHERE relation = '$1'::regclass"; }
NIL='$-1\r\n'

section "key types: cold then warm, byte for byte as row_to_json"
# cold_warm TABLE KEY...: MGET of the keys (distinct, never read before) twice: the first answer
# equals row_to_json and counts a miss per key; the second is the same bytes, a hit per key
cold_warm() {
    local table=$1 want h0 m0 n0 h1 m1 n1 h2 m2 n2 k
    shift
    want="*$#\\r\\n"
    for k; do want+=$(kwant "$k"); done
    read -r h0 m0 n0 <<<"$(kstats "$table")"
    check "$table: cold MGET $*" "$want" "$(raw "send:$(cmd MGET "$@")" read:1)"
    read -r h1 m1 n1 <<<"$(kstats "$table")"
    check "$table: ... every key a miss" "hits +0, misses +$#" "hits +$((h1 - h0)), misses +$((m1 - m0))"
    check "$table: warm MGET, the same bytes" "$want" "$(raw "send:$(cmd MGET "$@")" read:1)"
    read -r h2 m2 n2 <<<"$(kstats "$table")"
    check "$table: ... every key a hit" "hits +$#, misses +0" "hits +$((h2 - h1)), misses +$((m2 - m1))"
}
U1=a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11
U0=00000000-0000-0000-0000-000000000000
UF=ffffffff-ffff-ffff-ffff-ffffffffffff
cold_warm ktext 'ktext:alpha' 'ktext:a:b' 'ktext:a:b:c' 'ktext::lead' 'ktext:trail:' 'ktext:back\slash' \
    'ktext:a\:b' 'ktext:sp ace' 'ktext:trail ' 'ktext:ünï' 'ktext:日本' 'ktext:-0' 'ktext:007' 'ktext:' 'ktext:quote"s'
cold_warm kvar 'kvar:short' 'kvar:ten chars!' 'kvar:a:b'
cold_warm kchar 'kchar:ab' 'kchar:abcde' 'kchar:a b' 'kchar: x' 'kchar:' 'kchar:c:d'
cold_warm kuuid "uid:$U1" "uid:$U0" "uid:$UF"
cold_warm lines 'lines:7:1' 'lines:7:2' 'lines:7:10' 'lines:-3:0' 'lines:9223372036854775807:2147483647' \
    'lines:-9223372036854775808:-2147483648'
cold_warm acct 'acct:a\:b:3' 'acct:x\\y:1' 'acct:plain:1' 'acct::2' 'acct:a\\\:b:4' 'acct:end\\:5' 'acct:\:\::6' \
    'acct:a:3' 'acct:ü\:日本:1' 'acct:sp ace :8' "acct:$(printf 't%.0s' {1..300}):1"
cold_warm k3 "k3:eu:$U1:1" "k3:eu:$U1:2" "k3:a\\::$U0:-1" "k3:us\\\\:$UF:32767"
check "the spellings above are the ones SQL computes (acct)" 'acct:x\\y:1 acct:a\:b:3 acct:a\\\:b:4 acct:end\\:5 acct:\:\::6' \
    "$(sql "SELECT string_agg(key, ' ' ORDER BY json::json->>'n') FROM regress_keys_v WHERE key LIKE 'acct:%' AND (json::json->>'n')::int IN (1, 3, 4, 5, 6) AND json::json->>'tenant' IN ('a:b', 'x\\y', 'a\\:b', 'end\\', '::')")"
read -r h0 m0 n0 <<<"$(kstats ktext)"
raw_case "a key without a row, twice: nil both times" "$NIL$NIL" 'send:GET ktext:absent\r\nGET ktext:absent\r\n' read:2
read -r h1 m1 n1 <<<"$(kstats ktext)"
check "... the second answered by a negative entry" "misses +1, negative hits +1" "misses +$((m1 - m0)), negative hits +$((n1 - n0))"

section "key types: GET, MGET, EXISTS, hashes"
raw_case "GET of each key type" \
    "$(kwant 'ktext:a:b')$(kwant 'kvar:a:b')$(kwant 'kchar:c:d')$(kwant "uid:$U1")$(kwant 'lines:7:1')$(kwant 'acct:a\:b:3')$(kwant "k3:eu:$U1:1")" \
    "send:$(cmd GET 'ktext:a:b')$(cmd GET 'kvar:a:b')$(cmd GET 'kchar:c:d')$(cmd GET "uid:$U1")$(cmd GET 'lines:7:1')$(cmd GET 'acct:a\:b:3')$(cmd GET "k3:eu:$U1:1")" read:7
raw_case "MGET across the key types, with misses and duplicates, in order" \
    "*8\\r\\n$(kwant "k3:a\\::$U0:-1")$(kwant 'acct:x\\y:1')${NIL}$(kwant 'ktext:a:b:c')$(kwant 'lines:70:1')$(kwant 'acct:x\\y:1')${NIL}$(kwant "uid:$U0")" \
    "send:$(cmd MGET "k3:a\\::$U0:-1" 'acct:x\\y:1' 'lines:7:3' 'ktext:a:b:c' 'lines:70:1' 'acct:x\\y:1' 'acct:x\y:1' "uid:$U0")" read:1
check "single-column text keys are not escaped: ktext:a\\:b names 'a\\:b', ktext:a:b names 'a:b'" \
    "$(krow ktext "k = $(sq 'a\:b')")$(krow ktext "k = 'a:b'")" "$(raw "send:$(cmd GET 'ktext:a\:b')$(cmd GET 'ktext:a:b')" read:2)"
raw_case "text keys: the empty key, trailing blank, case" \
    "$(krow ktext "k = ''")$(krow ktext "k = 'trail '")${NIL}${NIL}" \
    "send:$(cmd GET 'ktext:')$(cmd GET 'ktext:trail ')$(cmd GET 'ktext:trail')$(cmd GET 'ktext:ALPHA')" read:4
# A character(n) key is named without its trailing blanks, as SCAN and the CLIENT TRACKING
# pushes name it: though its equality ignores them, a spelling with them names no key (a client
# caching the row under it would never be told of a change).
raw_case "char(5): the key without trailing blanks; with them (1, 3, 6, past the length) nil; leading ones kept" \
    "$(krow kchar "code = 'ab'")${NIL}${NIL}${NIL}$(krow kchar "code = ' x'")${NIL}$(krow kchar "code = 'abcde'")${NIL}${NIL}${NIL}" \
    "send:$(cmd GET 'kchar:ab')$(cmd GET 'kchar:ab ')$(cmd GET 'kchar:ab   ')$(cmd GET 'kchar:ab      ')$(cmd GET 'kchar: x')$(cmd GET 'kchar: x  ')$(cmd GET 'kchar:abcde')$(cmd GET 'kchar:abcde ')$(cmd GET 'kchar:x')$(cmd GET 'kchar:AB')" read:10
raw_case "char(5): the all-blank key is the empty id; blanks name no key" \
    "$(krow kchar "code = ''")${NIL}" "send:$(cmd GET 'kchar:')$(cmd GET 'kchar:     ')" read:2
raw_case "char(5) in a composite key: without trailing blanks there too" \
    "$(krow k3 "region = 'eu' AND ver = 1")${NIL}" \
    "send:$(cmd GET "k3:eu:$U1:1")$(cmd GET "k3:eu :$U1:1")" read:2
raw_case "EXISTS counts rows of every key type, duplicates each time, other spellings none" ':7\r\n' \
    "send:$(cmd EXISTS 'ktext:a:b' 'ktext:a:b' 'kchar:ab' 'kchar:ab   ' "uid:$U1" 'lines:7:1' 'acct:a\:b:3' "k3:eu:$U1:2" 'lines:7:3' "uid:${U1^^}")" read:1
hgetall_want() {
    sql "SELECT string_agg(e.key || E'\n' || e.value, E'\n' ORDER BY e.o)
           FROM regress_keys_v v, json_each_text(v.json::json) WITH ORDINALITY AS e(key, value, o)
          WHERE v.key = $(sq "$1") AND e.value IS NOT NULL"
}
for key in 'ktext:a:b' 'ktext:x' 'kvar:ten chars!' 'kchar:ab' "uid:$UF" 'lines:-3:0' 'acct:a\\\:b:4' "k3:us\\\\:$UF:32767"; do
    check "HGETALL $key: the non-NULL columns as text" "$(hgetall_want "$key")" "$(cli --raw HGETALL "$key")"
done
raw_case "HGET of key columns and others: text values (char(5) padded), NULL and unknown nil" \
    "$(bulk 'a:b')$(bulk 3)$(bulk 'ab   ')$(bulk "$U1")$(bulk 'us\')$(bulk 32767)\$-1\\r\\n\$-1\\r\\n" \
    "send:$(cmd HGET 'acct:a\:b:3' tenant)$(cmd HGET 'acct:a\:b:3' n)$(cmd HGET 'kchar:ab' code)$(cmd HGET "uid:$U1" id)$(cmd HGET "k3:us\\\\:$UF:32767" region)$(cmd HGET "k3:us\\\\:$UF:32767" ver)$(cmd HGET 'ktext:x' v)$(cmd HGET 'lines:7:1' nope)" read:8
raw_case "HMGET on a composite key" "*3\\r\\n$(bulk apple)\$-1\\r\\n$(bulk 2)" \
    "send:$(cmd HMGET 'lines:7:1' sku nope qty)" read:1
raw_case "HGETALL after HELLO 3: a map, for a composite key" \
    "%3\\r\\n$(bulk tenant)$(bulk 'a:b')$(bulk n)$(bulk 3)$(bulk v)$(bulk colon)" \
    'send:HELLO 3\r\n' skip:1 "send:$(cmd HGETALL 'acct:a\:b:3')" read:1
j_line=$(kjson 'lines:7:1')
j_uuid=$(kjson "uid:$U1")
raw_case "STRLEN, TYPE, TTL of a composite and a uuid key" \
    ":${#j_line}\\r\\n+string\\r\\n:-1\\r\\n:${#j_uuid}\\r\\n+string\\r\\n:-2\\r\\n" \
    "send:$(cmd STRLEN 'lines:7:1')$(cmd TYPE 'lines:7:1')$(cmd TTL "uid:$U1")$(cmd STRLEN "uid:$U1")$(cmd TYPE "uid:$U1")$(cmd TTL "uid:${U1^^}")" read:6

section "key types: non-canonical spellings name no key"
# nil_keys NAME KEY...: MGET of the keys answers nil for each, EXISTS counts none, and GET of
# each on a second connection (a transaction, not the hit path) answers nil too
nil_keys() {
    local name=$1 want k gets="" getwant=""
    shift
    want="*$#\\r\\n"
    for k; do want+=$NIL; gets+=$(cmd GET "$k"); getwant+=$NIL; done
    check "$name: MGET nil for each" "$want" "$(raw "send:$(cmd MGET "$@")" read:1)"
    check "$name: EXISTS 0" ":0\\r\\n" "$(raw "send:$(cmd EXISTS "$@")" read:1)"
    check "$name: GET nil for each" "$getwant" "$(raw "send:$gets" read:$#)"
}
nil_keys "uuid: upper case, mixed case, braces, no dashes, misplaced dash, short, blank, urn" \
    "uid:${U1^^}" "uid:A0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" "uid:{$U1}" "uid:${U1//-/}" \
    "uid:a0eebc999-c0b-4ef8-bb6d-6bb9bd380a11" "uid:${U1%1}" "uid:$U1 " "uid: $U1" "uid:urn:uuid:$U1" "uid:${UF^^}" \
    "kuuid:$U1"
nil_keys "composite integers: leading zeros, '+', -0, missing, extra and empty columns, out of range, escapes" \
    'lines:07:1' 'lines:7:01' 'lines:+7:1' 'lines:7:-0' 'lines:7' 'lines:7:1:2' 'lines:7:1:' 'lines::1' 'lines:7::1' \
    'lines:7\:1' 'lines:\7:1' 'lines:7:2147483648' 'lines:9223372036854775807:2147483648' 'lines:9223372036854775808:1' \
    'lines:-9223372036854775809:1' 'lines: 7:1' 'lines:7:1 ' 'lines:'
nil_keys "composite text: bad escapes, unescaped ':' (a wrong number of columns)" \
    'acct:a\b:1' 'acct:x\y:1' 'acct:a:b:3' 'acct:end\:5' 'acct:end\' 'acct:a\:b' 'acct:a\:b:3:' 'acct:\:\:6' 'acct:plain' \
    'acct:plain:1:1' 'acct:PLAIN:1' 'acct:plain:01'
nil_keys "three columns: uuid or smallint not canonical, wrong column count" \
    "k3:eu:${U1^^}:1" "k3:eu:$U1:01" "k3:eu:$U1" "k3:eu:$U1:1:1" "k3:eu:{$U1}:1" "k3:eu:$U1:32768" "k3:a::$U0:-1" "k3:EU:$U1:1" \
    "k3: eu:$U1:1"
nil_keys "text and char(n): other spellings" 'ktext:Alpha' 'ktext:alpha ' 'ktext: alpha' 'ktext:a\\:b' 'kvar:short ' \
    'kvar:eleven chrs' 'kvar:SHORT' 'kchar:abcdef' $'kchar:ab\t' 'kchar: ab' 'kchar:ab ' 'kchar:ab   ' 'kchar:c:d ' \
    'kchar: ' "k3:eu :$U1:1" "k3:a\\: :$U0:-1"
raw_case "a NUL byte or invalid UTF-8 in a text key: nil" "*4\\r\\n$NIL$NIL$NIL$NIL" \
    'send:*5\r\n$4\r\nMGET\r\n$9\r\nktext:a\x00b\r\n$8\r\nktext:\xff\xfe\r\n$9\r\nacct:\xc3\x28:1\r\n$11\r\nkchar:a\x00   \r\n' read:1
raw_case "... and the server still answers" '+PONG\r\n' 'send:PING\r\n' read:1

section "key types: SCAN and KEYS return the keys SQL computes"
# sql_keys PREFIX: the canonical keys SQL computes for the rows of PREFIX's table, sorted
sql_keys() { sql "SELECT key FROM regress_keys_v WHERE starts_with(key, $(sq "$1:"))" | sort; }
# kscan_walk MAXCALLS ARGS...: SCAN from cursor 0 to the end, a new connection for every call;
# prints the keys, one a line, "<cursor error: ...>" if a reply is no cursor, and "<more than
# MAXCALLS calls>" if the walk has not ended by then (a cursor going round in circles)
kscan_walk() {
    local cursor=0 reply calls=0 max=$1
    shift
    while :; do
        reply=$(cli --raw SCAN "$cursor" "$@")
        cursor=$(printf '%s\n' "$reply" | head -n 1)
        printf '%s\n' "$reply" | tail -n +2 | grep -v '^$'
        calls=$((calls + 1))
        [[ "$cursor" =~ ^[0-9]+$ ]] || { echo "<cursor error: $reply>"; break; }
        [[ "$cursor" == 0 ]] && break
        ((calls > max)) && { echo "<more than $max calls>"; break; }
    done
}
for prefix in ktext kvar kchar uid lines acct k3; do
    want=$(sql_keys "$prefix")
    check "redis-cli --scan --pattern '$prefix:*': the keys SQL computes, each once" "$want" \
        "$(cli --raw --scan --pattern "$prefix:*" | sort)"
    check "KEYS $prefix:*" "$want" "$(cli --raw KEYS "$prefix:*" | sort)"
done
# A table at a time, COUNT 1 and 3: every call but the last continues from a cursor inside the
# table (the walk is cut after twice as many calls as keys, plus a few).
for prefix in ktext kvar kchar uid lines acct k3; do
    want=$(sql_keys "$prefix")
    for count in 1 3; do
        check "SCAN MATCH $prefix:* COUNT $count, a new connection each call: each key once" "$want" \
            "$(kscan_walk $(($(wc -l <<<"$want") * 2 + 5)) MATCH "$prefix:*" COUNT "$count" | sort)"
    done
done
check "SCAN MATCH with an escaped backslash before ':' (tenants starting 'a:')" \
    "$(sql "SELECT key FROM regress_keys_v WHERE starts_with(key, $(sq 'acct:a\:'))" | sort)" \
    "$(kscan_walk 30 MATCH 'acct:a\\:*' COUNT 3 | sort)"
check "KEYS with the same pattern" \
    "$(sql "SELECT key FROM regress_keys_v WHERE starts_with(key, $(sq 'acct:a\:'))" | sort)" "$(cli --raw KEYS 'acct:a\\:*' | sort)"
mine='^(ktext|kvar|kchar|uid|lines|acct|k3|klong):'
scanned=$(cli --raw --scan | grep -E "$mine" | sort)
check "redis-cli --scan of everything: these tables' keys as SQL computes them" \
    "$(sql "SELECT key FROM regress_keys_v" | sort)" "$scanned"
# Every key SCAN returned reads back its row: one MGET of all of them against SQL's JSON.
declare -A json_of_key=()
while IFS=$'\t' read -r key json; do json_of_key[$key]=$json; done < <(sql "SELECT key || E'\t' || json FROM regress_keys_v")
mapfile -t scanned_keys <<<"$scanned"
want="*${#scanned_keys[@]}\\r\\n"
for key in "${scanned_keys[@]}"; do
    if [[ -n "${json_of_key[$key]+set}" ]]; then want+=$(bulk "${json_of_key[$key]}"); else want+="<no SQL row for $key>"; fi
done
check "every key SCAN returned (${#scanned_keys[@]}) reads back as its row: one MGET" "$want" \
    "$(raw "send:$(cmd MGET "${scanned_keys[@]}")" read:1)"
got_all=""
for key in "${scanned_keys[@]}"; do
    [[ "$(raw "send:$(cmd GET "$key")" read:1)" == "$(bulk "${json_of_key[$key]:-}")" ]] || got_all+="$key "
done
check "... and one GET each" "" "$got_all"

section "key types: SCAN past keys longer than a cursor keeps (240 bytes)"
check "klong has keys of 239, 240, 241, 300, 1000 and 2001 bytes" "1 1 239 240 241 300 1000 2001" \
    "$(sql "SELECT string_agg(octet_length(k)::text, ' ' ORDER BY octet_length(k)) FROM klong")"
for count in 1 2 3; do
    check "SCAN MATCH klong:* COUNT $count, a new connection each call: every key once" "$(sql_keys klong)" \
        "$(kscan_walk 30 MATCH 'klong:*' COUNT "$count" | sort)"
done
check "SCAN COUNT 1 over every key: these tables' keys each once" "$(sql "SELECT key FROM regress_keys_v" | sort)" \
    "$(kscan_walk 400 COUNT 1 | grep -E "$mine|^<" | sort)"
check "KEYS klong:*" "$(sql_keys klong)" "$(cli --raw KEYS 'klong:*' | sort)"
long_key="klong:h$(printf 'z%.0s' {1..2000})"
raw_case "GET of the 2001-byte key" "$(kwant "$long_key")" "send:$(cmd GET "$long_key")" read:1

section "key types: reads after COMMIT"
raw "send:$(cmd MGET 'ktext:a:b' 'ktext:a:b:moved' 'ktext:fresh:key' 'acct:a\:b:3' 'acct:a\:b:33' "uid:$U1" 'kchar:ab' 'kchar:zz' 'lines:7:2' 'lines:7:20' "k3:eu:$U1:1")" read:1 >/dev/null
raw "send:$(cmd MGET 'ktext:a:b' 'ktext:a:b:moved' 'ktext:fresh:key' 'acct:a\:b:3' 'acct:a\:b:33' "uid:$U1" 'kchar:ab' 'kchar:zz' 'lines:7:2' 'lines:7:20' "k3:eu:$U1:1")" read:1 >/dev/null
sql "UPDATE ktext SET v = 'updated' WHERE k = 'a:b'" >/dev/null
raw_case "text key: UPDATE of a non-key column" "$(krow ktext "k = 'a:b'")" "send:$(cmd GET 'ktext:a:b')" read:1
check "... HGET the new value" "updated" "$(cli --raw HGET 'ktext:a:b' v)"
sql "UPDATE ktext SET k = 'a:b:moved' WHERE k = 'a:b'" >/dev/null
raw_case "text key: UPDATE of the key (the new key was a cached nil): old nil, new present" \
    "${NIL}$(krow ktext "k = 'a:b:moved'")" "send:$(cmd GET 'ktext:a:b')$(cmd GET 'ktext:a:b:moved')" read:2
sql "DELETE FROM ktext WHERE k = 'a:b:moved'" >/dev/null
raw_case "text key: DELETE" "$NIL" "send:$(cmd GET 'ktext:a:b:moved')" read:1
sql "INSERT INTO ktext VALUES ('fresh:key', 'inserted', 99)" >/dev/null
raw_case "text key: INSERT of a key read as nil before" "$(krow ktext "k = 'fresh:key'")" "send:$(cmd GET 'ktext:fresh:key')" read:1
sql "UPDATE acct SET v = 'updated' WHERE tenant = 'a:b' AND n = 3" >/dev/null
raw_case "composite key: UPDATE of a non-key column" "$(krow acct "tenant = 'a:b' AND n = 3")" "send:$(cmd GET 'acct:a\:b:3')" read:1
sql "UPDATE acct SET n = 33 WHERE tenant = 'a:b' AND n = 3" >/dev/null
raw_case "composite key: UPDATE of one key column: old nil, new present" \
    "${NIL}$(krow acct "tenant = 'a:b' AND n = 33")" "send:$(cmd GET 'acct:a\:b:3')$(cmd GET 'acct:a\:b:33')" read:2
sql "UPDATE acct SET n = 3 WHERE tenant = 'a:b' AND n = 33" >/dev/null
raw_case "composite key: and back" "$(krow acct "tenant = 'a:b' AND n = 3")${NIL}" \
    "send:$(cmd GET 'acct:a\:b:3')$(cmd GET 'acct:a\:b:33')" read:2
sql "UPDATE kuuid SET v = 'a0ee updated' WHERE id = '$U1'" >/dev/null
raw_case "uuid key: UPDATE of a non-key column" "$(krow kuuid "id = '$U1'")" "send:$(cmd GET "uid:$U1")" read:1
sql "UPDATE kchar SET v = 'updated' WHERE code = 'ab'" >/dev/null
raw_case "char(5) key: UPDATE" "$(krow kchar "code = 'ab'")" "send:$(cmd GET 'kchar:ab')" read:1
sql "INSERT INTO kchar VALUES ('zz', 'inserted')" >/dev/null
raw_case "char(5) key read as nil, INSERTed: present; still nil with trailing blanks" \
    "$(krow kchar "code = 'zz'")${NIL}" "send:$(cmd GET 'kchar:zz')$(cmd GET 'kchar:zz   ')" read:2
sql "UPDATE lines SET line_no = 20 WHERE order_id = 7 AND line_no = 2" >/dev/null
raw_case "integer composite key: UPDATE of the key" "${NIL}$(krow lines "order_id = 7 AND line_no = 20")" \
    "send:$(cmd GET 'lines:7:2')$(cmd GET 'lines:7:20')" read:2
sql "DELETE FROM k3 WHERE region = 'eu' AND ver = 1" >/dev/null
raw_case "three columns: DELETE" "$NIL" "send:$(cmd GET "k3:eu:$U1:1")" read:1
sql "INSERT INTO k3 VALUES ('eu', '$U1', 1, 'eu one again')" >/dev/null
raw_case "three columns: INSERT again" "$(krow k3 "region = 'eu' AND ver = 1")" "send:$(cmd GET "k3:eu:$U1:1")" read:1
sql "INSERT INTO ktext VALUES (E'new\\nline\\ttab', 'control characters', 1)" >/dev/null
raw_case "a text key with a newline and a tab (binary-safe key)" "$(krow ktext "k = E'new\\nline\\ttab'")" \
    'send:*2\r\n$3\r\nGET\r\n$18\r\nktext:new\nline\ttab\r\n' read:1
sql "DELETE FROM ktext WHERE k = E'new\\nline\\ttab'" >/dev/null
raw_case "... deleted" "$NIL" 'send:*2\r\n$3\r\nGET\r\n$18\r\nktext:new\nline\ttab\r\n' read:1

section "key types: writes"
kw() { cli --no-auth-warning --user regress_resp_keywriter --pass "$PW_KEYWRITER" --raw "$@"; }
# INVALID_RE KEY TABLE: the error of a write whose key names no key of the table
INVALID_RE() {
    printf "^ERR invalid key '%s': not a key of table %s( \\\\(SQLSTATE 22023\\\\))?\$" \
        "$(printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g')" "$2"
}
# NONCANONICAL KEY CANONICAL: the error of a write to another spelling of the key CANONICAL
NONCANONICAL() { printf 'ERR key "%s" is not in canonical form; the row'"'"'s key is "%s" (SQLSTATE 22023)' "$1" "$2"; }
raw "send:$(cmd GET 'ktext:w:1')$(cmd GET 'ktext:w:1')" read:2 >/dev/null   # a cached nil
check "SET of a new text key with ':'" "OK" "$(kw SET 'ktext:w:1' '{"v":"written","n":1}')"
check "... SQL has it" "w:1|written|1" "$(sql "SELECT k || '|' || v || '|' || n FROM ktext WHERE k = 'w:1'")"
raw_case "... GET shows it" "$(krow ktext "k = 'w:1'")" "send:$(cmd GET 'ktext:w:1')" read:1
check "SET with the key column equal to the key" "OK" "$(kw SET 'ktext:w:1' '{"k":"w:1","v":"again"}')"
check "... absent columns back to their DEFAULT" "w:1|again|<null>" "$(sql "SELECT k || '|' || v || '|' || coalesce(n::text, '<null>') FROM ktext WHERE k = 'w:1'")"
check "SET whose key column differs from the key" "ERR the object's key column k differs from the key (SQLSTATE 22023)" \
    "$(kw SET 'ktext:w:1' '{"k":"w:2","v":"no"}')"
check "... nothing written" "again|0" "$(sql "SELECT v || '|' || (SELECT count(*) FROM ktext WHERE k = 'w:2') FROM ktext WHERE k = 'w:1'")"
check "SET of a text key ending in a blank: its own key (every text is its own spelling), not refused" \
    "OK|OK|w |1" "$(kw SET 'ktext:w ' '{"v":"blank"}')|$(kw SET 'kvar:w ' '{"v":"blank"}')|$(sql "SELECT k FROM ktext WHERE v = 'blank'")|$(sql "SELECT count(*) FROM kvar WHERE k = 'w '")"
check "... DEL of both: 2, and the key without the blank was never written" "2|0" \
    "$(kw DEL 'ktext:w ' 'kvar:w ')|$(sql "SELECT count(*) FROM ktext WHERE k = 'w'")"
check "SET of a text key with '\\' (no escaping in a one-column key)" "OK" "$(kw SET 'ktext:w\x' '{"v":"bs"}')"
check "... SQL has the key with its backslash" "bs" "$(sql "SELECT v FROM ktext WHERE k = $(sq 'w\x')")"
check "HSET of a text key's column" "0" "$(kw HSET 'ktext:w\x' v 'hset')"
check "... SQL has it" "hset" "$(sql "SELECT v FROM ktext WHERE k = $(sq 'w\x')")"
check "HINCRBY on a text key (NULL counts as 0)" "5" "$(kw HINCRBY 'ktext:w\x' n 5)"
check "HSET of the text key column itself" 'ERR column "k" is the key: it is set by the key itself (SQLSTATE 42P10)' \
    "$(kw HSET 'ktext:w\x' k other)"
rows_before=$(sql "SELECT count(*) FROM ktext")
check_re "SET of a text key with invalid UTF-8: an error" '^-ERR ' \
    "$(raw "send:AUTH regress_resp_keywriter $PW_KEYWRITER\\r\\n" skip:1 'send:*3\r\n$3\r\nSET\r\n$8\r\nktext:\xff\xfe\r\n$2\r\n{}\r\n' read:1)"
check "... nothing written" "$rows_before" "$(sql "SELECT count(*) FROM ktext")"
check_re "an invalid key with CR LF in it: one error line (CR LF as blanks), the connection usable" \
    "^-ERR invalid key 'lines:x  :2': not a key of table lines( \\(SQLSTATE 22023\\))?\\\\r\\\\n\\+PONG\\\\r\\\\n\$" \
    "$(raw "send:AUTH regress_resp_keywriter $PW_KEYWRITER\\r\\n" skip:1 'send:*3\r\n$3\r\nSET\r\n$11\r\nlines:x\r\n:2\r\n$2\r\n{}\r\nPING\r\n' read:2)"
check "an integer column followed by CR LF (blanks to int4in): another spelling of lines:1:2, one error line" \
    "-$(NONCANONICAL 'lines:1  :2' 'lines:1:2')\\r\\n+PONG\\r\\n" \
    "$(raw "send:AUTH regress_resp_keywriter $PW_KEYWRITER\\r\\n" skip:1 'send:*3\r\n$3\r\nSET\r\n$11\r\nlines:1\r\n:2\r\n$2\r\n{}\r\nPING\r\n' read:2)"

check "SET of a varchar(10) key" "OK" "$(kw SET 'kvar:new:one' '{"v":"new"}')"
check "... SQL has it" "new" "$(sql "SELECT v FROM kvar WHERE k = 'new:one'")"
check_re "SET of a varchar(10) key longer than 10: an error" '^ERR ' "$(kw SET 'kvar:eleven chrs' '{"v":"x"}')"
check "... nothing written" "0" "$(sql "SELECT count(*) FROM kvar WHERE k LIKE 'eleven%'")"

check "SET of a char(5) key" "OK" "$(kw SET 'kchar:w' '{"v":"char write"}')"
check "... SQL has it, padded to 5" "5|char write" "$(sql "SELECT octet_length(code) || '|' || v FROM kchar WHERE code = 'w'")"
check "SET of a char(5) key written with trailing blanks: refused, naming the key" "$(NONCANONICAL 'kchar:w   ' 'kchar:w')" \
    "$(kw SET 'kchar:w   ' '{"code":"w","v":"blanks"}')"
check "HSET, HDEL, HINCRBY, DEL of it: refused the same way" \
    "$(NONCANONICAL 'kchar:w ' 'kchar:w')|$(NONCANONICAL 'kchar:w ' 'kchar:w')|$(NONCANONICAL 'kchar:w ' 'kchar:w')|$(NONCANONICAL 'kchar:w ' 'kchar:w')" \
    "$(kw HSET 'kchar:w ' v hset)|$(kw HDEL 'kchar:w ' v)|$(kw HINCRBY 'kchar:w ' v 1)|$(kw DEL 'kchar:w ')"
check "... the row as SET made it" "1|char write" "$(sql "SELECT count(*) || '|' || max(v) FROM kchar WHERE code = 'w'")"
raw_case "... GET: the key without its blanks; with them nil" "$(krow kchar "code = 'w'")${NIL}" \
    "send:$(cmd GET 'kchar:w')$(cmd GET 'kchar:w  ')" read:2
check "SET of a char(5) key in a composite key with trailing blanks: refused, naming the key" \
    "$(NONCANONICAL "k3:eu :$U1:2" "k3:eu:$U1:2")" "$(kw SET "k3:eu :$U1:2" '{"note":"blanks"}')"
check_re "SET of a char(5) key of 7 characters: an error" '^ERR ' "$(kw SET 'kchar:toolong' '{"v":"x"}')"
check "... nothing written" "0" "$(sql "SELECT count(*) FROM kchar WHERE code LIKE 'toolo%'")"

U2=5b8f2a3c-1d4e-4f60-9a7b-8c9d0e1f2a3b
raw "send:$(cmd GET "uid:$U2")" read:1 >/dev/null   # a cached nil
check "SET of a new uuid key" "OK" "$(kw SET "uid:$U2" '{"v":"new uuid"}')"
check "... SQL has it" "new uuid" "$(sql "SELECT v FROM kuuid WHERE id = '$U2'")"
raw_case "... GET shows it" "$(krow kuuid "id = '$U2'")" "send:$(cmd GET "uid:$U2")" read:1
check "SET of an upper-case uuid key: refused, naming the key" "$(NONCANONICAL "uid:${U2^^}" "uid:$U2")" "$(kw SET "uid:${U2^^}" '{"v":"upper"}')"
check "SET of a uuid in braces, without dashes: refused the same way" \
    "$(NONCANONICAL "uid:{$U2}" "uid:$U2")|$(NONCANONICAL "uid:${U2//-/}" "uid:$U2")" \
    "$(kw SET "uid:{$U2}" '{"v":"braces"}')|$(kw HSET "uid:${U2//-/}" v 'no dashes')"
check_re "SET of a uuid key of 31 digits: invalid key (no uuid at all)" "$(INVALID_RE "uid:${U2%b}" kuuid)" "$(kw SET "uid:${U2%b}" '{"v":"short"}')"
check "... nothing written" "new uuid" "$(sql "SELECT string_agg(v, ',') FROM kuuid WHERE id = '$U2'")"
check "SET with the key column in upper case: the same uuid, written" "OK" "$(kw SET "uid:$U2" "{\"id\":\"${U2^^}\",\"v\":\"same\"}")"
check_re "SET with another uuid in the key column: refused" "^ERR the object's key column id differs from the key" \
    "$(kw SET "uid:$U2" "{\"id\":\"$U1\",\"v\":\"other\"}")"
check "... the rows are as they were" "same|a0ee updated" \
    "$(sql "SELECT (SELECT v FROM kuuid WHERE id = '$U2') || '|' || (SELECT v FROM kuuid WHERE id = '$U1')")"
check "HSET of a uuid key's column" "0" "$(kw HSET "uid:$U2" v 'hset uuid')"
check "... SQL has it" "hset uuid" "$(sql "SELECT v FROM kuuid WHERE id = '$U2'")"

raw "send:$(cmd GET 'lines:8:1')$(cmd GET 'lines:8:1')" read:2 >/dev/null   # a cached nil
check "SET of a new composite key" "OK" "$(kw SET 'lines:8:1' '{"sku":"s81","qty":2}')"
check "... SQL has it" "8|1|s81|2" "$(sql "SELECT order_id || '|' || line_no || '|' || sku || '|' || qty FROM lines WHERE order_id = 8")"
raw_case "... GET shows it" "$(krow lines "order_id = 8 AND line_no = 1")" "send:$(cmd GET 'lines:8:1')" read:1
check "SET with both key columns equal to the key" "OK" "$(kw SET 'lines:8:1' '{"order_id":8,"line_no":1,"sku":"s81b"}')"
check "... SQL has it (qty back to its DEFAULT)" "8|1|s81b|<null>" \
    "$(sql "SELECT order_id || '|' || line_no || '|' || sku || '|' || coalesce(qty::text, '<null>') FROM lines WHERE order_id = 8")"
check_re "SET whose second key column differs from the key: refused" "^ERR the object's key column .*differs from the key \\(SQLSTATE 22023\\)$" \
    "$(kw SET 'lines:8:1' '{"order_id":8,"line_no":2,"sku":"moved"}')"
check_re "SET whose first key column differs from the key: refused" "^ERR the object's key column .*differs from the key \\(SQLSTATE 22023\\)$" \
    "$(kw SET 'lines:8:1' '{"order_id":9,"sku":"moved"}')"
check "... nothing written" "8|1|s81b" "$(sql "SELECT string_agg(order_id || '|' || line_no || '|' || sku, ',') FROM lines WHERE order_id IN (8, 9)")"
check_re "SET of a key missing a column: invalid key" "$(INVALID_RE 'lines:8' lines)" "$(kw SET 'lines:8' '{"sku":"x"}')"
check_re "SET of a key with an extra column: invalid key" "$(INVALID_RE 'lines:8:1:1' lines)" "$(kw SET 'lines:8:1:1' '{"sku":"x"}')"
check "SET of a key with a leading zero: refused, naming the key" "$(NONCANONICAL 'lines:08:1' 'lines:8:1')" "$(kw SET 'lines:08:1' '{"sku":"x"}')"
check "SET of a key with '+' and a blank: refused, naming the key" "$(NONCANONICAL 'lines:+8: 1' 'lines:8:1')" "$(kw SET 'lines:+8: 1' '{"sku":"x"}')"
check_re "SET of a key whose int column is out of range: invalid key" "$(INVALID_RE 'lines:8:2147483648' lines)" \
    "$(kw SET 'lines:8:2147483648' '{"sku":"x"}')"
check "... nothing written" "1" "$(sql "SELECT count(*) FROM lines WHERE order_id = 8")"
check "HSET of a missing composite row inserts it: the fields counted" "1" "$(kw HSET 'lines:8:2' sku s82)"
check "... SQL has it" "8|2|s82|<null>" \
    "$(sql "SELECT order_id || '|' || line_no || '|' || sku || '|' || coalesce(qty::text, '<null>') FROM lines WHERE order_id = 8 AND line_no = 2")"
qty=$(sql "SELECT qty FROM lines WHERE order_id = 7 AND line_no = 1")
check "HINCRBY on a composite key" "$((qty + 5))" "$(kw HINCRBY 'lines:7:1' qty 5)"
check "... SQL has it" "$((qty + 5))" "$(sql "SELECT qty FROM lines WHERE order_id = 7 AND line_no = 1")"
check "HINCRBY of a missing composite row inserts it" "3" "$(kw HINCRBY 'lines:8:3' qty 3)"
check "... SQL has it" "8|3|3" "$(sql "SELECT order_id || '|' || line_no || '|' || qty FROM lines WHERE order_id = 8 AND line_no = 3")"
check "HDEL on a composite key counts the non-NULL columns" "1" "$(kw HDEL 'lines:8:2' sku qty)"
check "... SQL has NULLs" "<null>|<null>" "$(sql "SELECT coalesce(sku, '<null>') || '|' || coalesce(qty::text, '<null>') FROM lines WHERE order_id = 8 AND line_no = 2")"
check "HSET of a key column of a composite key" 'ERR column "line_no" is the key: it is set by the key itself (SQLSTATE 42P10)' \
    "$(kw HSET 'lines:7:1' line_no 5)"
check "HINCRBY of a key column of a composite key" 'ERR column "ver" is the key: it is set by the key itself (SQLSTATE 42P10)' \
    "$(kw HINCRBY "k3:eu:$U1:2" ver 1)"
check_re "HSET of an invalid composite key: invalid key" "$(INVALID_RE 'lines:8' lines)" "$(kw HSET 'lines:8' sku x)"
raw_case "GET after the writes equals SQL" \
    "$(krow lines "order_id = 7 AND line_no = 1")$(krow lines "order_id = 8 AND line_no = 2")$(krow lines "order_id = 8 AND line_no = 3")" \
    "send:$(cmd GET 'lines:7:1')$(cmd GET 'lines:8:2')$(cmd GET 'lines:8:3')" read:3

raw "send:$(cmd GET 'acct:new\:tenant:1')" read:1 >/dev/null   # a cached nil
check "SET of a composite key with an escaped ':'" "OK" "$(kw SET 'acct:new\:tenant:1' '{"v":"escaped colon"}')"
check "... SQL has the tenant unescaped" "new:tenant|1|escaped colon" "$(sql "SELECT tenant || '|' || n || '|' || v FROM acct WHERE v = 'escaped colon'")"
raw_case "... GET shows it" "$(krow acct "tenant = 'new:tenant' AND n = 1")" "send:$(cmd GET 'acct:new\:tenant:1')" read:1
check "SET of a composite key with an escaped '\\'" "OK" "$(kw SET 'acct:w\\x:2' '{"v":"escaped backslash"}')"
check "... SQL has the tenant unescaped" 'w\x|2' "$(sql "SELECT tenant || '|' || n FROM acct WHERE v = 'escaped backslash'")"
check "SET with key columns equal to an escaped key" "OK" "$(kw SET 'acct:a\\\:b:4' '{"tenant":"a\\:b","n":4,"v":"same key"}')"
check "... SQL has it" "same key" "$(sql "SELECT v FROM acct WHERE tenant = $(sq 'a\:b') AND n = 4")"
check_re "SET whose text key column is the escaped spelling: refused" "^ERR the object's key column .*differs from the key" \
    "$(kw SET 'acct:a\:b:3' '{"tenant":"a\\:b","n":3,"v":"escaped spelling"}')"
check_re "SET of a key with a bad escape: invalid key" "$(INVALID_RE 'acct:bad\q:1' acct)" "$(kw SET 'acct:bad\q:1' '{"v":"x"}')"
check_re "SET of a key with an unescaped ':': invalid key" "$(INVALID_RE 'acct:a:b:9' acct)" "$(kw SET 'acct:a:b:9' '{"v":"x"}')"
check "... nothing written" "0" "$(sql "SELECT count(*) FROM acct WHERE v = 'x' OR tenant LIKE 'bad%' OR n = 9")"
check "HSET of an existing row with a '\\' in its key" "0" "$(kw HSET 'acct:x\\y:1' v hello)"
check "... SQL has it" "hello" "$(sql "SELECT v FROM acct WHERE tenant = $(sq 'x\y') AND n = 1")"
check "HSET of a missing row with an escaped key inserts it" "1" "$(kw HSET 'acct:hs\:new\\:9' v z)"
check "... SQL has it" 'hs:new\|9|z' "$(sql "SELECT tenant || '|' || n || '|' || v FROM acct WHERE n = 9")"
written_keys=$(cli --raw KEYS 'acct:*' | sort)
check "KEYS shows the written keys as SQL computes them" "$(sql_keys acct)" "$written_keys"
check_re "... among them the escaped ones" 'acct:hs\\:new\\\\:9.*acct:new\\:tenant:1' "${written_keys//$'\n'/ }"

check "HSET of a three-column key with an escaped ':' in its char(3) column" "0" \
    "$(kw HSET "k3:a\\::$U0:-1" note 'changed')"
check "... SQL has it" "changed" "$(sql "SELECT note FROM k3 WHERE region = 'a:' AND ver = -1")"
check "SET of a new three-column key" "OK" "$(kw SET "k3:x\\\\:$U2:7" '{"note":"new k3"}')"
check "... SQL has it" 'x\|5b8f2a3c-1d4e-4f60-9a7b-8c9d0e1f2a3b|7' \
    "$(sql "SELECT format('%s|%s|%s', rtrim(region::text), id, ver) FROM k3 WHERE note = 'new k3'")"
raw_case "... GET shows it" "$(krow k3 "note = 'new k3'")" "send:$(cmd GET "k3:x\\\\:$U2:7")" read:1

check "DEL with another spelling of a key among the keys: refused as a whole, naming the key" \
    "$(NONCANONICAL "uid:${U2^^}" "uid:$U2")" "$(kw DEL 'lines:8:1' "uid:$U2" "uid:${U2^^}" 'ktext:w:1')"
check "... nothing deleted" "1|1|1" \
    "$(sql "SELECT (SELECT count(*) FROM lines WHERE order_id = 8 AND line_no = 1) || '|' || (SELECT count(*) FROM kuuid WHERE id = '$U2') || '|' || (SELECT count(*) FROM ktext WHERE k = 'w:1')")"
check "DEL across key types: counts the rows deleted (texts that spell no key, and duplicates, nothing)" "8" \
    "$(kw DEL 'lines:8:1' 'lines:8:2' 'lines:8:3' 'lines:8' 'lines:8:1:1' 'acct:new\:tenant:1' 'acct:new:tenant:1' \
        "uid:$U2" "uid:${U2%b}" 'ktext:w:1' 'ktext:w:1' 'kchar:w' "k3:x\\\\:$U2:7")"
check "... SQL has none of them" "0" \
    "$(sql "SELECT (SELECT count(*) FROM lines WHERE order_id = 8) + (SELECT count(*) FROM acct WHERE tenant = 'new:tenant')
          + (SELECT count(*) FROM kuuid WHERE id = '$U2') + (SELECT count(*) FROM ktext WHERE k = 'w:1')
          + (SELECT count(*) FROM kchar WHERE code = 'w') + (SELECT count(*) FROM k3 WHERE id = '$U2')")"
raw_case "... RESP neither" ':0\r\n' \
    "send:$(cmd EXISTS 'lines:8:1' 'lines:8:2' 'lines:8:3' 'acct:new\:tenant:1' "uid:$U2" 'ktext:w:1' 'kchar:w' "k3:x\\\\:$U2:7")" read:1
check "a role with SELECT only: NOPERM on a composite key's write" "NOPERM permission denied for table acct" \
    "$(cli --raw HSET 'acct:a\:b:3' v reader)"

section "key types: MULTI / EXEC and WATCH"
raw_case "MULTI of GETs of composite, uuid and text keys: one array" \
    "+OK\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n*3\\r\\n$(kwant 'acct:a\:b:3')$(kwant "uid:$U1")$(kwant 'ktext:a:b:c')" \
    "send:MULTI\\r\\n$(cmd GET 'acct:a\:b:3')$(cmd GET "uid:$U1")$(cmd GET 'ktext:a:b:c')EXEC\\r\\n" read:5
raw_case "MULTI of a SET and a GET of an escaped composite key" \
    "+OK\\r\\n+OK\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n*2\\r\\n+OK\\r\\n$(bulk '{"tenant":"m:x","n":1,"v":"multi"}')" \
    "send:AUTH regress_resp_keywriter $PW_KEYWRITER\\r\\nMULTI\\r\\n$(cmd SET 'acct:m\:x:1' '{"v":"multi"}')$(cmd GET 'acct:m\:x:1')EXEC\\r\\n" read:5
check "... SQL has it" '{"tenant":"m:x","n":1,"v":"multi"}' "$(sql "SELECT row_to_json(t)::text FROM acct t WHERE tenant = 'm:x'")"
# resp_bytes ARG...: the bytes of one request as a RESP array
resp_bytes() { local arg; printf '*%d\r\n' "$#"; for arg; do printf '$%d\r\n%s\r\n' "${#arg}" "$arg"; done; }
kread() { local line; IFS= read -r -t 10 -u "$kconn" line; printf '%s' "${line%$'\r'}"; }
exec {kconn}<>"/dev/tcp/127.0.0.1/$RESP_PORT"
{ resp_bytes AUTH regress_resp_keywriter "$PW_KEYWRITER"; resp_bytes WATCH 'acct:m\:x:1'; } >&"$kconn"
kread >/dev/null; kread >/dev/null
sql "UPDATE acct SET v = 'changed by SQL' WHERE tenant = 'm:x' AND n = 1" >/dev/null
{ resp_bytes MULTI; resp_bytes HSET 'acct:m\:x:1' v watched; resp_bytes EXEC; } >&"$kconn"
kread >/dev/null; kread >/dev/null
check "WATCH of a composite key, the row changed by SQL, MULTI ... EXEC: nil" "*-1" "$(kread)"
check "... the row keeps SQL's write" "changed by SQL" "$(sql "SELECT v FROM acct WHERE tenant = 'm:x' AND n = 1")"
{ resp_bytes WATCH 'acct:m\:x:1'; resp_bytes MULTI; resp_bytes HSET 'acct:m\:x:1' v watched; resp_bytes EXEC; } >&"$kconn"
kread >/dev/null; kread >/dev/null; kread >/dev/null
check "WATCH of a composite key, no change, MULTI ... EXEC: written" "*1" "$(kread)"
kread >/dev/null
check "... SQL has it" "watched" "$(sql "SELECT v FROM acct WHERE tenant = 'm:x' AND n = 1")"
{ resp_bytes WATCH "k3:eu:$U1:2"; } >&"$kconn"
kread >/dev/null
sql "UPDATE k3 SET note = 'changed by SQL' WHERE region = 'eu' AND ver = 2" >/dev/null
{ resp_bytes MULTI; resp_bytes HSET "k3:eu:$U1:2" note watched; resp_bytes EXEC; } >&"$kconn"
kread >/dev/null; kread >/dev/null
check "WATCH of a key with a char(n) column, changed by SQL: EXEC nil" "*-1" "$(kread)"
check "... the row keeps SQL's write" "changed by SQL" "$(sql "SELECT note FROM k3 WHERE region = 'eu' AND ver = 2")"
{ resp_bytes WATCH "k3:eu :$U1:2"; } >&"$kconn"
kread >/dev/null
sql "UPDATE k3 SET note = 'changed by SQL again' WHERE region = 'eu' AND ver = 2" >/dev/null
{ resp_bytes MULTI; resp_bytes HSET "k3:eu:$U1:2" note watched; resp_bytes EXEC; } >&"$kconn"
kread >/dev/null; kread >/dev/null
check "WATCH of the key spelled with char(n) blanks watches a missing key: the change does not stop EXEC" "*1" "$(kread)"
kread >/dev/null
check "... the row is EXEC's" "watched" "$(sql "SELECT note FROM k3 WHERE region = 'eu' AND ver = 2")"
{ resp_bytes MULTI; resp_bytes HSET "k3:eu :$U1:2" note blanks; resp_bytes EXEC; } >&"$kconn"
kread >/dev/null; kread >/dev/null
check "MULTI with a write to the key spelled with blanks: EXECABORT naming the key" \
    "-EXECABORT Transaction rolled back: $(NONCANONICAL "k3:eu :$U1:2" "k3:eu:$U1:2")" "$(kread)"
exec {kconn}>&-
check "... nothing written" "watched" "$(sql "SELECT note FROM k3 WHERE region = 'eu' AND ver = 2")"
check "the server log has no crash (during this suite)" "" "$(log_since "$keys_log_start" | crash_lines)"

sql "DROP VIEW regress_keys_v; DROP TABLE ktext, kvar, kchar, kuuid, lines, acct, k3, klong; DROP ROLE regress_resp_keywriter" >/dev/null
unset -f sq kjson kwant krow kstats cold_warm nil_keys kscan_walk sql_keys kw kread resp_bytes hgetall_want INVALID_RE NONCANONICAL
