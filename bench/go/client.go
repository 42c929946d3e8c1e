// bench/go/client.go: the Go client of the benchmark harness (pgx v4 and a plain RESP2 client).
//
// Same command line and stdin/stdout protocol as bench/loadgen.cpp and bench/node/client.js:
//
//	gobench check --pg CONNINFO --resp-port P --redis-port R [--resp-user U --resp-password W]
//	gobench run --pg CONNINFO --path PATH --conns N --batch B --seconds S [--mode warm|miss|mixed|cold|write]
//	            [--resp-port P] [--redis-port R] [--resp-user U --resp-password W]
//
// PATH: sql | mget | mget_json | fdw | resp | redis (reads of B keys), update | resp_set | redis_set
// (writes of one random row; resp_set connects as U). `run` connects, prepares and warms every
// connection (3 requests each), prints READY, waits for a line on stdin, runs S seconds (one
// goroutine per connection, closed loop, one outstanding request each), prints one JSON line
// (counts, latency percentiles, its own CPU time) and waits for another line before it disconnects.
//
// Every path turns its reply into typed rows: prepared SQL and the FDW scan (id int64, value
// *string) from pgx's binary results; mget is `local_cache.mget(...)` itself, whose record[]
// pgx decodes in binary (pgtype.Record inside a registered `_record` ArrayType, see
// registerRecordArray); mget_json and RESP values are decoded with encoding/json.
//
// Built in GOPATH mode from Debian's packages only (golang-go, golang-github-jackc-pgx-v4-dev):
// GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off go build (bench/Makefile, target go).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
)

var sqlFor = map[string]string{
	"sql": "SELECT * FROM public.items WHERE id = ANY($1::bigint[])",
	// the record[] itself (no array_to_json): pgx decodes the composite array in binary
	"mget":      "SELECT local_cache.mget('public.items'::regclass, $1::bigint[])",
	"mget_json": "SELECT local_cache.mget_json('public.items'::regclass, $1::bigint[])",
	"fdw":       "SELECT * FROM cache.items WHERE id = ANY($1::bigint[])",
	"update":    "UPDATE public.items SET value = $2 WHERE id = $1",
}

const updateSQL = "UPDATE public.items SET value = $2 WHERE id = $1"

type options struct {
	cmd, pg, path, mode, prefix, respUser, respPassword     string
	respPort, redisPort, conns, batch, updatePct, hot, rows int
	seconds                                                 float64
}

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "go client: "+format+"\n", a...)
	os.Exit(2)
}

func parseArgs(argv []string) options {
	o := options{path: "sql", mode: "warm", prefix: "items", conns: 4, batch: 1, updatePct: 5, hot: 128, rows: 4096,
		seconds: 1}
	if len(argv) < 1 {
		die("usage: gobench check|run [options] (see the header of bench/go/client.go)")
	}
	o.cmd = argv[0]
	for i := 1; i < len(argv); i += 2 {
		if i+1 >= len(argv) {
			die("missing value for %s", argv[i])
		}
		v := argv[i+1]
		num := func() int {
			n, err := strconv.Atoi(v)
			if err != nil {
				die("bad number for %s: %s", argv[i], v)
			}
			return n
		}
		switch argv[i] {
		case "--pg":
			o.pg = v
		case "--path":
			o.path = v
		case "--mode":
			o.mode = v
		case "--prefix":
			o.prefix = v
		case "--resp-user":
			o.respUser = v
		case "--resp-password":
			o.respPassword = v
		case "--resp-port":
			o.respPort = num()
		case "--redis-port":
			o.redisPort = num()
		case "--conns":
			o.conns = num()
		case "--batch":
			o.batch = num()
		case "--update-pct":
			o.updatePct = num()
		case "--hot":
			o.hot = num()
		case "--rows":
			o.rows = num()
		case "--seconds":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				die("bad number for --seconds: %s", v)
			}
			o.seconds = f
		default:
			die("unknown option %s", argv[i])
		}
	}
	return o
}

// ------------------------------------------------------------------ pgx

// recordElem is pgtype.Record (binary decoding only: PostgreSQL's text output of an anonymous
// record carries no column types) made a ValueTranscoder so that pgtype.ArrayType can hold it.
type recordElem struct{ pgtype.Record }

var errTextRecord = errors.New("record: only the binary format can be decoded")

func (r *recordElem) DecodeText(*pgtype.ConnInfo, []byte) error { return errTextRecord }
func (r recordElem) EncodeText(*pgtype.ConnInfo, []byte) ([]byte, error) {
	return nil, errors.New("record: cannot be sent")
}
func (r recordElem) EncodeBinary(*pgtype.ConnInfo, []byte) ([]byte, error) {
	return nil, errors.New("record: cannot be sent")
}

const recordArrayOID = 2287 // _record

// registerRecordArray teaches the connection's type map record[] (pgx v4 has pgtype.Record but no
// array of it). Being a BinaryDecoder, pgx asks for the column in binary; each element is decoded
// field by field by the type OIDs the record's binary form carries (int8, text).
func registerRecordArray(c *pgx.Conn) {
	c.ConnInfo().RegisterDataType(pgtype.DataType{
		Value: pgtype.NewArrayType("_record", pgtype.RecordOID, func() pgtype.ValueTranscoder { return &recordElem{} }),
		Name:  "_record", OID: recordArrayOID})
}

func pgConnect(ctx context.Context, conninfo string) *pgx.Conn {
	cfg, err := pgx.ParseConfig(conninfo)
	if err != nil {
		die("bad conninfo %q: %v", conninfo, err)
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		die("connection failed: %v", err)
	}
	registerRecordArray(c)
	return c
}

func prepare(ctx context.Context, c *pgx.Conn, name, sql string) {
	if _, err := c.Prepare(ctx, name, sql); err != nil {
		die("PREPARE %s: %v", sql, err)
	}
}

// row is a row of public.items as every path decodes it.
type row struct {
	ID    int64   `json:"id"`
	Value *string `json:"value"`
}

// queryRows runs a set-returning prepared statement (sql, fdw) and scans its rows.
func queryRows(ctx context.Context, c *pgx.Conn, name string, keys interface{}) ([]row, error) {
	rs, err := c.Query(ctx, name, keys)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.ID, &r.Value); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// queryMget runs mget and decodes its record[]: one element per key, nil for NULL.
func queryMget(ctx context.Context, c *pgx.Conn, name string, keys interface{}) ([]*row, error) {
	var recs [][]interface{}
	if err := c.QueryRow(ctx, name, keys).Scan(&recs); err != nil {
		return nil, err
	}
	out := make([]*row, len(recs))
	for i, f := range recs {
		if f == nil {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("mget element %d has %d fields, expected 2", i, len(f))
		}
		id, ok := f[0].(int64)
		if !ok {
			return nil, fmt.Errorf("mget element %d: id is %T", i, f[0])
		}
		r := &row{ID: id}
		switch v := f[1].(type) {
		case string:
			r.Value = &v
		case nil:
		default:
			return nil, fmt.Errorf("mget element %d: value is %T", i, f[1])
		}
		out[i] = r
	}
	return out, nil
}

// queryMgetJSON runs mget_json and decodes the JSON array into rows (nil for null).
func queryMgetJSON(ctx context.Context, c *pgx.Conn, name string, keys interface{}) ([]*row, string, error) {
	var text string
	if err := c.QueryRow(ctx, name, keys).Scan(&text); err != nil {
		return nil, "", err
	}
	var out []*row
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, text, fmt.Errorf("mget_json: %v", err)
	}
	return out, text, nil
}

// ------------------------------------------------------------------ RESP2 client

type respKind int

const (
	respNil respKind = iota
	respBulk
	respSimple
	respError
	respInteger
	respArray
)

type respValue struct {
	kind  respKind
	str   string
	items []respValue
}

func (v respValue) String() string {
	switch v.kind {
	case respNil:
		return "nil"
	case respBulk:
		return "bulk " + v.str
	case respSimple:
		return "+" + v.str
	case respError:
		return "-" + v.str
	case respInteger:
		return ":" + v.str
	}
	return fmt.Sprintf("an array of %d", len(v.items))
}

type respConn struct {
	c   net.Conn
	r   *bufio.Reader
	out []byte
}

func respConnect(port int) *respConn {
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		die("connect to 127.0.0.1:%d: %v", port, err)
	}
	c.(*net.TCPConn).SetNoDelay(true)
	return &respConn{c: c, r: bufio.NewReaderSize(c, 65536)}
}

// respConnectAs connects and, when a user is given, AUTHs first.
func respConnectAs(port int, user, password string) *respConn {
	rc := respConnect(port)
	if user != "" {
		v, err := rc.call("AUTH", user, password)
		if err != nil || v.kind != respSimple || v.str != "OK" {
			die("AUTH %s on port %d: %v %v", user, port, v, err)
		}
	}
	return rc
}

func (rc *respConn) call(args ...string) (respValue, error) {
	b := rc.out[:0]
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	rc.out = b
	if _, err := rc.c.Write(b); err != nil {
		return respValue{}, err
	}
	return rc.read()
}

func (rc *respConn) line() (string, error) {
	s, err := rc.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(s) < 2 || s[len(s)-2] != '\r' {
		return "", fmt.Errorf("RESP protocol error: line without CRLF %q", s)
	}
	return s[:len(s)-2], nil
}

func (rc *respConn) read() (respValue, error) {
	l, err := rc.line()
	if err != nil {
		return respValue{}, err
	}
	if l == "" {
		return respValue{}, errors.New("RESP protocol error: empty line")
	}
	switch l[0] {
	case '+':
		return respValue{kind: respSimple, str: l[1:]}, nil
	case '-':
		return respValue{kind: respError, str: l[1:]}, nil
	case ':':
		return respValue{kind: respInteger, str: l[1:]}, nil
	case '$':
		n, err := strconv.Atoi(l[1:])
		if err != nil {
			return respValue{}, fmt.Errorf("RESP protocol error: %q", l)
		}
		if n < 0 {
			return respValue{kind: respNil}, nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(rc.r, buf); err != nil {
			return respValue{}, err
		}
		return respValue{kind: respBulk, str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(l[1:])
		if err != nil {
			return respValue{}, fmt.Errorf("RESP protocol error: %q", l)
		}
		if n < 0 {
			return respValue{kind: respNil}, nil
		}
		v := respValue{kind: respArray, items: make([]respValue, n)}
		for i := range v.items {
			if v.items[i], err = rc.read(); err != nil {
				return respValue{}, err
			}
		}
		return v, nil
	}
	return respValue{}, fmt.Errorf("RESP protocol error: unexpected byte %q", l[0])
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (rc *respConn) close() { rc.c.Close() }

// ------------------------------------------------------------------ shared helpers

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomValue(rng *rand.Rand) string {
	b := make([]byte, 128)
	for i := range b {
		b[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return string(b)
}

// jsonString escapes as PostgreSQL's escape_json (row_to_json) does: \" \\ \b \f \n \r \t,
// other control characters \u00xx, everything else as is (encoding/json differs: \u0008, \u003c, ...).
func jsonString(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch ch {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if ch < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, ch)
			} else {
				b.WriteByte(ch)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rowJSON is the row (id, value) as RESP SET writes it: byte for byte row_to_json(row)::text.
func rowJSON(id int64, value string) string {
	return `{"id":` + strconv.FormatInt(id, 10) + `,"value":` + jsonString(value) + `}`
}

// missKeys: the keys of one request of the miss mode, as bench/loadgen.cpp's miss_keys.
func missKeys(o options, seq uint64, index int) []int64 {
	k := make([]int64, o.batch)
	if o.batch == 1 {
		if (seq+uint64(index))%2 == 0 {
			k[0] = 1
		} else {
			k[0] = int64(o.rows) + 1
		}
		return k
	}
	for i := 0; i < o.batch; i++ {
		if i%2 == 0 {
			k[i] = int64(i/2 + 1)
		} else {
			k[i] = int64(o.rows + i/2 + 1)
		}
	}
	return k
}

// ------------------------------------------------------------------ check

var failures int

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "go client check: MISMATCH: "+format+"\n", a...)
	failures++
}

func showRow(r *row) string {
	if r == nil {
		return "NULL"
	}
	v := "NULL"
	if r.Value != nil {
		v = *r.Value
	}
	return fmt.Sprintf("(%d,%s)", r.ID, v)
}

func sameRow(a, b *row) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.ID != b.ID || (a.Value == nil) != (b.Value == nil) {
		return false
	}
	return a.Value == nil || *a.Value == *b.Value
}

// checkJSONElement: an element of mget_json's array is exactly {"id":..,"value":..} (or null).
func checkJSONElement(ctx string, raw json.RawMessage, exp *row) {
	if exp == nil {
		if string(raw) != "null" {
			fail("%s: expected null, got %s", ctx, raw)
		}
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 2 || m["id"] == nil || m["value"] == nil {
		fail("%s: expected an object {id, value} for key %d, got %s", ctx, exp.ID, raw)
		return
	}
	var r row
	if err := json.Unmarshal(raw, &r); err != nil || !sameRow(&r, exp) {
		fail("%s: got %s, expected %s", ctx, raw, showRow(exp))
	}
}

type expRow struct {
	row
	json string
}

// checkWrites: the write paths on rows the reads do not use (firstID, firstID+1), as
// bench/loadgen.cpp's check_writes: the row read through RESP first (cached, so the write must
// invalidate it); RESP SET as the writing role, then mget_json, plain SQL and RESP GET (the
// reading role) show exactly the object; the prepared SQL UPDATE, then SQL and RESP GET show it;
// redis-server SET of the same bytes, then GET (leaving redis-server equal to the table).
func checkWrites(ctx context.Context, o options, c *pgx.Conn, resp, redis *respConn, firstID int64) int {
	prepare(ctx, c, "row", "SELECT value, row_to_json(i)::text FROM public.items i WHERE id = $1")
	prepare(ctx, c, "update", updateSQL)
	writer := respConnectAs(o.respPort, o.respUser, o.respPassword)
	defer writer.close()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	cases := [][2]string{
		{randomValue(rng), randomValue(rng)},
		{"quote \" backslash \\ tab \t newline \n bell \x07 slash / \u00e9 " + randomValue(rng)[:16],
			"update \"\\\t\x01 " + randomValue(rng)[:16]},
	}
	compared := 0
	for i, cs := range cases {
		id := firstID + int64(i)
		key := o.prefix + ":" + strconv.FormatInt(id, 10)
		where := "write check, " + key
		sqlRow := func(when string) (value *string, js string) {
			rs, err := c.Query(ctx, "row", id)
			if err != nil {
				die("query row %d: %v", id, err)
			}
			n := 0
			for rs.Next() {
				if err := rs.Scan(&value, &js); err != nil {
					die("scan row %d: %v", id, err)
				}
				n++
			}
			rs.Close()
			if rs.Err() != nil {
				die("query row %d: %v", id, rs.Err())
			}
			if n != 1 {
				fail("%s: %s, SQL finds %d rows, expected 1", where, when, n)
			}
			return
		}
		expectGet := func(rc *respConn, who, when, want string) {
			g, err := rc.call("GET", key)
			if err != nil || g.kind != respBulk || g.str != want {
				fail("%s: %s, %s GET answers %v %v, expected %s", where, when, who, g, err, want)
			}
			compared++
		}
		expectOK := func(v respValue, err error, what string) {
			if err != nil || v.kind != respSimple || v.str != "OK" {
				fail("%s: %s answered %v %v, expected +OK", where, what, v, err)
			}
			compared++
		}
		_, before := sqlRow("before the writes")
		expectGet(resp, "RESP", "before the writes", before)

		json1 := rowJSON(id, cs[0])
		v, err := writer.call("SET", key, json1)
		expectOK(v, err, "RESP SET "+json1)
		_, text, err := queryMgetJSON(ctx, c, "mget_json", []int64{id})
		var arr []json.RawMessage
		if err != nil || json.Unmarshal([]byte(text), &arr) != nil || len(arr) != 1 {
			fail("%s: after RESP SET, mget_json answers %s %v", where, text, err)
		} else {
			val := cs[0]
			checkJSONElement(where+": after RESP SET, mget_json", arr[0], &row{ID: id, Value: &val})
		}
		compared++
		val, js := sqlRow("after RESP SET")
		if val == nil || *val != cs[0] || js != json1 {
			fail("%s: after RESP SET, SQL shows %s, expected %s", where, js, json1)
		}
		compared++
		expectGet(resp, "RESP", "after RESP SET", json1)

		json2 := rowJSON(id, cs[1])
		tag, err := c.Exec(ctx, "update", id, cs[1])
		if err != nil {
			die("UPDATE %d: %v", id, err)
		}
		if tag.RowsAffected() != 1 {
			fail("%s: SQL UPDATE changed %d rows, expected 1", where, tag.RowsAffected())
		}
		compared++
		if _, js := sqlRow("after SQL UPDATE"); js != json2 {
			fail("%s: after SQL UPDATE, SQL shows %s, expected %s", where, js, json2)
		}
		compared++
		expectGet(resp, "RESP", "after SQL UPDATE", json2)

		v, err = redis.call("SET", key, json2)
		expectOK(v, err, "redis-server SET")
		expectGet(redis, "redis-server", "after redis-server SET", json2)
	}
	return compared
}

func check(o options) {
	ctx := context.Background()
	c := pgConnect(ctx, o.pg)
	prepare(ctx, c, "expected", "SELECT id, value, row_to_json(i)::text FROM public.items i WHERE id = ANY($1::bigint[])")
	for _, p := range []string{"sql", "mget", "mget_json", "fdw"} {
		prepare(ctx, c, p, sqlFor[p])
	}
	var resp, redis *respConn
	if o.respPort != 0 {
		resp = respConnect(o.respPort)
	}
	if o.redisPort != 0 {
		redis = respConnect(o.redisPort)
	}
	k := func(v int64) *int64 { return &v }
	cases := [][]*int64{{k(1)}, {k(3), k(1), k(3), k(999999)}, {k(5), nil, k(5), k(0), k(-1)}, {}, {nil, nil},
		{k(4096), k(1), k(4097)}, {nil}, {k(42), k(42), k(42)}}
	for _, n := range []int{16, 64} {
		fw, bw := make([]*int64, n), make([]*int64, n)
		for i := 0; i < n; i++ {
			fw[i], bw[n-1-i] = k(int64(i+1)), k(int64(i+1))
		}
		cases = append(cases, fw, bw)
	}
	// the keys of the miss mode (every other one without a row), as the timed samples send them
	for _, n := range []int{1, 16, 64} {
		m := o
		m.batch = n
		seqs := 1
		if n == 1 {
			seqs = 2
		}
		for seq := 0; seq < seqs; seq++ {
			var ks []*int64
			for _, x := range missKeys(m, uint64(seq), 0) {
				ks = append(ks, k(x))
			}
			cases = append(cases, ks)
		}
	}
	compared := 0
	for pass := 0; pass < 2; pass++ { // pass 1 may fill the cache, pass 2 hits it
		for _, keys := range cases {
			var lit []string
			for _, x := range keys {
				if x == nil {
					lit = append(lit, "NULL")
				} else {
					lit = append(lit, strconv.FormatInt(*x, 10))
				}
			}
			ctx0 := fmt.Sprintf("keys {%s} (pass %d)", strings.Join(lit, ","), pass+1)
			exp := map[int64]expRow{}
			rs, err := c.Query(ctx, "expected", keys)
			if err != nil {
				die("query expected %s: %v", ctx0, err)
			}
			for rs.Next() {
				var e expRow
				if err := rs.Scan(&e.ID, &e.Value, &e.json); err != nil {
					die("scan expected: %v", err)
				}
				exp[e.ID] = e
			}
			rs.Close()
			var want []row
			for _, e := range exp {
				want = append(want, e.row)
			}
			sort.Slice(want, func(i, j int) bool { return want[i].ID < want[j].ID })
			// set-returning paths: the set of distinct existing keys
			for _, p := range []string{"sql", "fdw"} {
				got, err := queryRows(ctx, c, p, keys)
				if err != nil {
					die("%s %s: %v", p, ctx0, err)
				}
				sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
				if len(got) != len(want) {
					fail("%s %s: %d rows, expected %d", p, ctx0, len(got), len(want))
				} else {
					for i := range got {
						if !sameRow(&got[i], &want[i]) {
							fail("%s %s: row %s, expected %s", p, ctx0, showRow(&got[i]), showRow(&want[i]))
						}
					}
				}
				compared++
			}
			expFor := func(key *int64) *row {
				if key == nil {
					return nil
				}
				if e, ok := exp[*key]; ok {
					r := e.row
					return &r
				}
				return nil
			}
			// mget: pgx's decoding of the record array; one element per key, input order
			if got, err := queryMget(ctx, c, "mget", keys); err != nil {
				fail("mget %s: %v", ctx0, err)
			} else if len(got) != len(keys) {
				fail("mget %s: %d elements, expected %d", ctx0, len(got), len(keys))
			} else {
				for i := range keys {
					if e := expFor(keys[i]); !sameRow(got[i], e) {
						fail("mget %s element %d: %s, expected %s", ctx0, i, showRow(got[i]), showRow(e))
					}
				}
			}
			compared++
			// mget_json: exactly {id, value} objects or null
			if _, text, err := queryMgetJSON(ctx, c, "mget_json", keys); err != nil {
				fail("mget_json %s: %v", ctx0, err)
			} else {
				var arr []json.RawMessage
				if err := json.Unmarshal([]byte(text), &arr); err != nil || len(arr) != len(keys) {
					fail("mget_json %s: not a JSON array of %d: %s", ctx0, len(keys), text)
				} else {
					for i := range keys {
						checkJSONElement(fmt.Sprintf("mget_json %s element %d", ctx0, i), arr[i], expFor(keys[i]))
					}
				}
			}
			compared++
			// RESP paths: MGET of the non-NULL keys; values byte for byte row_to_json; no keys: an error
			args := []string{"MGET"}
			var rk []int64
			for _, x := range keys {
				if x != nil {
					rk = append(rk, *x)
					args = append(args, o.prefix+":"+strconv.FormatInt(*x, 10))
				}
			}
			for _, srv := range []struct {
				name string
				rc   *respConn
			}{{"resp", resp}, {"redis", redis}} {
				if srv.rc == nil {
					continue
				}
				where := srv.name + " MGET " + ctx0
				v, err := srv.rc.call(args...)
				if err != nil {
					die("%s: %v", where, err)
				}
				if len(rk) == 0 {
					if v.kind != respError {
						fail("%s: MGET without keys should be an error, got %v", where, v)
					}
				} else if v.kind != respArray || len(v.items) != len(rk) {
					fail("%s: expected an array of %d, got %v", where, len(rk), v)
				} else {
					for i, key := range rk {
						e, ok := exp[key]
						it := v.items[i]
						if !ok {
							if it.kind != respNil {
								fail("%s element %d: expected nil, got %v", where, i, it)
							}
						} else if it.kind != respBulk || it.str != e.json {
							fail("%s element %d: got %v, expected %s", where, i, it, e.json)
						}
					}
				}
				compared++
			}
		}
	}
	writeCompared := 0
	if resp != nil && redis != nil {
		writeCompared = checkWrites(ctx, o, c, resp, redis, 4005)
	}
	compared += writeCompared
	c.Close(ctx)
	if resp != nil {
		resp.close()
	}
	if redis != nil {
		redis.close()
	}
	fmt.Fprintf(os.Stderr, "go client check: %d comparisons (%d of them writes), %d mismatches\n", compared,
		writeCompared, failures)
	fmt.Printf("{\"client\":\"go\",\"comparisons\":%d,\"write_comparisons\":%d,\"mismatches\":%d}\n", compared,
		writeCompared, failures)
	if failures > 0 {
		os.Exit(1)
	}
}

// ------------------------------------------------------------------ run

type slot struct {
	index int
	seq   uint64
	pg    *pgx.Conn
	rc    *respConn
	rng   *rand.Rand
	lat   []uint32
	reads uint64
	upds  uint64
}

func isRespPath(p string) bool {
	return p == "resp" || p == "redis" || p == "resp_set" || p == "redis_set"
}

func keysFor(o options, s *slot) []int64 {
	k := make([]int64, o.batch)
	switch {
	case o.mode == "warm" || o.path == "update":
		for i := range k {
			k[i] = int64(i + 1)
		}
	case o.mode == "miss":
		return missKeys(o, s.seq, s.index)
	case o.mode == "mixed":
		start := (s.seq*uint64(o.batch) + uint64(s.index)*7) % uint64(o.hot)
		for i := range k {
			k[i] = int64((start+uint64(i))%uint64(o.hot)) + 1
		}
	default: // cold: walk the whole table so that reads keep missing after the flush
		start := (s.seq*uint64(o.batch) + uint64(s.index)*4099) % uint64(o.rows)
		for i := range k {
			k[i] = int64((start+uint64(i))%uint64(o.rows)) + 1
		}
	}
	return k
}

// one request of a slot; returns whether it was an update.
func one(ctx context.Context, o options, s *slot) (bool, error) {
	isSet := o.path == "resp_set" || o.path == "redis_set"
	if isSet { // one random row, the whole object, as the bytes row_to_json gives
		id := int64(s.rng.Intn(o.rows)) + 1
		v, err := s.rc.call("SET", o.prefix+":"+strconv.FormatInt(id, 10), rowJSON(id, randomValue(s.rng)))
		s.seq++
		if err != nil {
			return true, err
		}
		if v.kind != respSimple || v.str != "OK" {
			return true, fmt.Errorf("SET answered %v, expected +OK", v)
		}
		return true, nil
	}
	if o.path == "update" || (o.mode == "mixed" && s.rng.Intn(100) < o.updatePct) {
		n := o.rows
		if o.mode == "mixed" {
			n = o.hot
		}
		id := int64(s.rng.Intn(n)) + 1
		s.seq++
		_, err := s.pg.Exec(ctx, "u", id, randomValue(s.rng))
		return true, err
	}
	keys := keysFor(o, s)
	s.seq++
	present := 0
	for _, x := range keys {
		if x >= 1 && x <= int64(o.rows) {
			present++
		}
	}
	absent := o.batch - present
	if isRespPath(o.path) {
		args := make([]string, 0, len(keys)+1)
		args = append(args, "MGET")
		for _, x := range keys {
			args = append(args, o.prefix+":"+strconv.FormatInt(x, 10))
		}
		v, err := s.rc.call(args...)
		if err != nil {
			return false, err
		}
		if v.kind == respError {
			return false, fmt.Errorf("RESP error: %s", v.str)
		}
		if v.kind != respArray || len(v.items) != o.batch {
			return false, fmt.Errorf("RESP reply %v, expected an array of %d", v, o.batch)
		}
		nils := 0
		rows := make([]*row, len(v.items)) // decoded rows, like pgx's
		for i, it := range v.items {
			if it.kind == respNil {
				nils++
				continue
			}
			r := &row{}
			if err := json.Unmarshal([]byte(it.str), r); err != nil {
				return false, fmt.Errorf("RESP value %q: %v", it.str, err)
			}
			rows[i] = r
		}
		if nils != absent {
			return false, fmt.Errorf("RESP reply with %d nils, expected %d", nils, absent)
		}
		return false, nil
	}
	switch o.path {
	case "sql", "fdw":
		rows, err := queryRows(ctx, s.pg, "q", keys)
		if err != nil {
			return false, err
		}
		if o.mode != "mixed" && len(rows) != present {
			return false, fmt.Errorf("unexpected row count %d (expected %d)", len(rows), present)
		}
	case "mget", "mget_json":
		var rows []*row
		var err error
		if o.path == "mget" {
			rows, err = queryMget(ctx, s.pg, "q", keys)
		} else {
			rows, _, err = queryMgetJSON(ctx, s.pg, "q", keys)
		}
		if err != nil {
			return false, err
		}
		if o.mode != "mixed" {
			nulls := 0
			for _, r := range rows {
				if r == nil {
					nulls++
				}
			}
			if len(rows) != o.batch || nulls != absent {
				return false, fmt.Errorf("%s answered %d elements with %d nulls, expected %d with %d", o.path, len(rows),
					nulls, o.batch, absent)
			}
		}
	}
	return false, nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func run(o options) {
	ctx := context.Background()
	isSet := o.path == "resp_set" || o.path == "redis_set"
	isResp := isRespPath(o.path)
	if !isResp && sqlFor[o.path] == "" {
		die("unknown path %s", o.path)
	}
	if isSet && o.mode != "write" {
		die("path %s needs --mode write", o.path)
	}
	switch o.mode {
	case "warm", "miss", "mixed", "cold", "write":
	default:
		die("unknown mode %s", o.mode)
	}
	slots := make([]*slot, o.conns)
	for i := range slots {
		s := &slot{index: i, rng: rand.New(rand.NewSource(int64(12345 + i)))}
		if !isResp || o.mode == "mixed" {
			s.pg = pgConnect(ctx, o.pg)
			if !isResp {
				prepare(ctx, s.pg, "q", sqlFor[o.path])
			}
			prepare(ctx, s.pg, "u", updateSQL)
		}
		switch {
		case o.path == "resp_set": // the writing role (the default RESP role may only read)
			s.rc = respConnectAs(o.respPort, o.respUser, o.respPassword)
		case isResp:
			port := o.redisPort
			if o.path == "resp" {
				port = o.respPort
			}
			s.rc = respConnect(port)
		}
		for j := 0; j < 3; j++ { // warm every connection
			if _, err := one(ctx, o, s); err != nil {
				die("warm-up failed: %v", err)
			}
		}
		slots[i] = s
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("READY")
	if _, err := in.ReadString('\n'); err != nil {
		die("no GO line on stdin")
	}
	var stop int32
	var firstErr atomic.Value
	cpu0 := cpuSeconds()
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, s := range slots {
		s.lat = make([]uint32, 0, 1<<16)
		wg.Add(1)
		go func(s *slot) {
			defer wg.Done()
			for atomic.LoadInt32(&stop) == 0 {
				a := time.Now()
				upd, err := one(ctx, o, s)
				if err != nil {
					firstErr.CompareAndSwap(nil, err.Error())
					atomic.StoreInt32(&stop, 1)
					return
				}
				s.lat = append(s.lat, uint32(time.Since(a).Microseconds()))
				if upd {
					s.upds++
				} else {
					s.reads++
				}
			}
		}(s)
	}
	time.Sleep(time.Duration(o.seconds * float64(time.Second)))
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	cpu := cpuSeconds() - cpu0
	if e := firstErr.Load(); e != nil {
		die("run failed: %s", e)
	}
	var lat []uint32
	var reads, upds uint64
	for _, s := range slots {
		lat = append(lat, s.lat...)
		reads += s.reads
		upds += s.upds
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) uint32 {
		if len(lat) == 0 {
			return 0
		}
		i := int(p / 100 * float64(len(lat)))
		if i > len(lat)-1 {
			i = len(lat) - 1
		}
		return lat[i]
	}
	var max uint32
	if len(lat) > 0 {
		max = lat[len(lat)-1]
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"requests":%d,"reads":%d,"updates":%d,"elapsed_s":%.6f,"client_cpu_s":%.6f,"threads":%d,`+
		`"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d}}`, reads+upds, reads, upds, elapsed, cpu,
		runtime.GOMAXPROCS(0), pct(50), pct(90), pct(99), pct(99.9), max)
	fmt.Println(b.String())
	in.ReadString('\n') // the caller reads server CPU before we disconnect
	for _, s := range slots {
		if s.pg != nil {
			s.pg.Close(ctx)
		}
		if s.rc != nil {
			s.rc.close()
		}
	}
}

func main() {
	o := parseArgs(os.Args[1:])
	switch o.cmd {
	case "check":
		check(o)
	case "run":
		run(o)
	default:
		die("unknown command %s (check|run)", o.cmd)
	}
}
