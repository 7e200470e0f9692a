package gateway

import (
	"strconv"
	"strings"
	"time"
)

// The connection commands: they answer from the gateway itself.

// RedisVersion is the Redis version the gateway reports (HELLO, INFO): the
// protocol and command semantics it follows, for clients that check.
const RedisVersion = "7.4.0"

func runPing(c *call, dst []byte) []byte {
	switch len(c.args) {
	case 1:
		return appendSimple(dst, "PONG")
	case 2:
		return appendBulk(dst, c.args[1])
	}
	return appendError(dst, wrongArity(c.args[0]))
}

func runEcho(c *call, dst []byte) []byte { return appendBulk(dst, c.args[1]) }

// runTime answers TIME with the gateway's clock: seconds and
// microseconds since the Unix epoch.
func runTime(_ *call, dst []byte) []byte {
	now := time.Now()
	dst = appendArray(dst, 2)
	dst = appendBulkString(dst, strconv.FormatInt(now.Unix(), 10))
	return appendBulkString(dst, strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// runHello switches the protocol (HELLO [2|3] [AUTH user pass] [SETNAME
// name]), authenticates, and describes the server. Without users
// configured, AUTH accepts the default user with any password, as Redis'
// nopass default user does; with users, a connection not authenticated yet
// must authenticate in its HELLO.
func runHello(c *call, dst []byte) []byte {
	proto := 0
	if len(c.args) > 1 {
		v, err := strconv.Atoi(string(c.args[1]))
		if err != nil {
			return appendError(dst, "ERR Protocol version is not an integer or out of range")
		}
		if v != 2 && v != 3 {
			return appendError(dst, "NOPROTO unsupported protocol version")
		}
		proto = v
	}
	name, setName := "", false
	var user, password string
	for i := 2; i < len(c.args); i++ {
		switch strings.ToLower(string(c.args[i])) {
		case "auth":
			if i+2 >= len(c.args) {
				return appendError(dst, "ERR Syntax error in HELLO option 'auth'")
			}
			user, password = string(c.args[i+1]), string(c.args[i+2])
			i += 2
		case "setname":
			if i+1 >= len(c.args) {
				return appendError(dst, "ERR Syntax error in HELLO option 'setname'")
			}
			if !validName(c.args[i+1]) {
				return appendError(dst, errBadName)
			}
			name, setName = string(c.args[i+1]), true
			i++
		default:
			return appendError(dst, "ERR Syntax error in HELLO option '"+clip(c.args[i])+"'")
		}
	}
	switch {
	case user != "":
		if e := c.srv.authenticate(c.sess, user, password); e != "" {
			return appendError(dst, e)
		}
	case !c.srv.admittedAll(c.sess):
		return appendError(dst, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	}
	s := c.sess
	s.mu.Lock()
	if proto != 0 {
		s.proto = proto
	}
	if setName {
		s.name = name
	}
	proto = s.proto
	s.mu.Unlock()
	resp3 := proto == 3
	dst = appendMap(dst, 7, resp3)
	dst = appendBulkString(dst, "server")
	dst = appendBulkString(dst, "redis")
	dst = appendBulkString(dst, "version")
	dst = appendBulkString(dst, RedisVersion)
	dst = appendBulkString(dst, "proto")
	dst = appendInt(dst, int64(proto))
	dst = appendBulkString(dst, "id")
	dst = appendInt(dst, s.id)
	dst = appendBulkString(dst, "mode")
	dst = appendBulkString(dst, c.srv.mode())
	dst = appendBulkString(dst, "role")
	dst = appendBulkString(dst, "master")
	dst = appendBulkString(dst, "modules")
	return appendArray(dst, 0)
}

const errBadName = "ERR Client names cannot contain spaces, newlines or special characters."

// validName is Redis' rule for client names: printable, no spaces.
func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// runClient answers CLIENT ID, GETNAME, SETNAME, INFO and SETINFO.
func runClient(c *call, dst []byte) []byte {
	s := c.sess
	sub := strings.ToLower(string(c.args[1]))
	switch {
	case sub == "unblock" && (len(c.args) == 3 || len(c.args) == 4):
		return runClientUnblock(c, dst)
	case sub == "id" && len(c.args) == 2:
		return appendInt(dst, s.id)
	case sub == "getname" && len(c.args) == 2:
		s.mu.Lock()
		name := s.name
		s.mu.Unlock()
		if name == "" {
			return appendNull(dst, c.resp3)
		}
		return appendBulkString(dst, name)
	case sub == "setname" && len(c.args) == 3:
		if !validName(c.args[2]) {
			return appendError(dst, errBadName)
		}
		s.mu.Lock()
		s.name = string(c.args[2])
		s.mu.Unlock()
		return appendOK(dst)
	case sub == "setinfo" && len(c.args) == 4:
		attr := strings.ToLower(string(c.args[2]))
		if attr != "lib-name" && attr != "lib-ver" {
			return appendError(dst, "ERR Unrecognized option '"+clip(c.args[2])+"'")
		}
		s.mu.Lock()
		if attr == "lib-name" {
			s.libName = string(c.args[3])
		} else {
			s.libVer = string(c.args[3])
		}
		s.mu.Unlock()
		return appendOK(dst)
	case sub == "info" && len(c.args) == 2:
		return appendBulkString(dst, s.info())
	case sub == "id" || sub == "getname" || sub == "setname" || sub == "setinfo" || sub == "info":
		return appendError(dst, "ERR wrong number of arguments for 'client|"+sub+"' command")
	}
	return appendError(dst, "ERR unknown subcommand '"+clip(c.args[1])+"'. Try CLIENT HELP.")
}

// info is the connection's CLIENT INFO line.
func (s *session) info() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "id=" + strconv.FormatInt(s.id, 10) + " addr=" + s.remote + " laddr=" + s.local +
		" name=" + s.name + " db=0 resp=" + strconv.Itoa(s.proto) +
		" lib-name=" + s.libName + " lib-ver=" + s.libVer + "\n"
}

func runSelect(c *call, dst []byte) []byte {
	if string(c.args[1]) != "0" {
		return appendError(dst, "ERR DB index is out of range")
	}
	return appendOK(dst)
}

func runQuit(c *call, dst []byte) []byte {
	c.sess.quit.Store(true)
	return appendOK(dst)
}
