// bench/go/client.go: the Go client of the benchmark harness (pgx v4 and a plain RESP2 client):
// what it does and main; the package's other files are listed in bench/README.md.
//
// Same command line and stdin/stdout protocol as bench/loadgen (loadgen_main.cpp) and bench/node/client.js:
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
// GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off go build -o gobench . (bench/Makefile, target go).
package main

import "os"

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
