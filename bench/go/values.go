// bench/go/values.go: what requests send: random values, a row's JSON as row_to_json spells it,
// and the miss mode's keys (as bench/loadgen's).

package main

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

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

// missKeys: the keys of one request of the miss mode, as bench/loadgen_keys.cpp's miss_keys.
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
