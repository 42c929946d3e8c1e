// bench/go/run.go: the `run` subcommand: one goroutine per connection in a closed loop over one
// path, the READY/GO protocol, and the result line (counts, latency percentiles, CPU).

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v4"
)

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
