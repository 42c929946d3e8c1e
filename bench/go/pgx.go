// bench/go/pgx.go: the SQL side: each path's statement, connections through pgx v4 with record[]
// registered, and every SQL path's reply decoded into typed rows.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
