// bench/go/resp.go: a plain blocking RESP2 client (one request, one reply), enough for the
// benchmark's commands and their checks.

package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
)

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
