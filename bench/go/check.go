// bench/go/check.go: the `check` subcommand: every read path against prepared SQL (both passes,
// the miss keys), then the write paths; any difference is a MISMATCH and exit 1.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v4"
)

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
// bench/loadgen_check.cpp's check_writes: the row read through RESP first (cached, so the write must
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
