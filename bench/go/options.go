// bench/go/options.go: the command line of gobench (the same options as bench/loadgen and
// bench/node) and how it stops on bad input.

package main

import (
	"fmt"
	"os"
	"strconv"
)

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
