//go:build linux

package redispipe

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/internal/testing/redistest"
)

// loop is a test's event loop over one connection.
type loop struct {
	t    *testing.T
	epfd int
	conn *Conn
}

func newLoop(t *testing.T, addr string) *loop {
	t.Helper()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(epfd) })
	l := &loop{t: t, epfd: epfd}
	ap := netip.MustParseAddrPort(addr)
	l.conn = New(ap, func(old, fd int) error {
		if old >= 0 {
			_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, old, nil)
		}
		if fd < 0 {
			return nil
		}
		return unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLET, Fd: int32(fd)})
	}, [][]byte{[]byte("CLIENT"), []byte("SETNAME"), []byte("redispipe-test")})
	t.Cleanup(l.conn.Close)
	return l
}

// until runs the loop until done holds, failing after a bounded number
// of waits of at most a second each.
func (l *loop) until(done func() bool) {
	l.t.Helper()
	events := make([]unix.EpollEvent, 4)
	for range 50 {
		l.conn.Flush()
		if done() {
			return
		}
		if _, err := unix.EpollWait(l.epfd, events, 1000); err != nil && err != unix.EINTR {
			l.t.Fatal(err)
		}
		l.conn.Poll()
	}
	l.t.Fatal("no reply")
}

type recorder struct{ replies map[int]Reply }

func (r *recorder) RedisReply(tag int, rep Reply) {
	rep.Value = append([]byte(nil), rep.Value...)
	r.replies[tag] = rep
}

// TestPipeline sends a pipeline to a real Redis and checks every kind of
// reply, in order, then a broken connection: the commands in flight fail,
// a command while it is down is refused.
func TestPipeline(t *testing.T) {
	srv := redistest.Start(t)
	l := newLoop(t, srv.Addr())
	rec := &recorder{replies: map[int]Reply{}}
	cmds := []struct {
		args []string
		want Reply
	}{
		{[]string{"SET", "k", "v"}, Reply{Kind: '+', Value: []byte("OK")}},
		{[]string{"GET", "k"}, Reply{Kind: '$', Value: []byte("v")}},
		{[]string{"GET", "absent"}, Reply{Kind: '$', Nil: true, Value: []byte{}}},
		{[]string{"INCRBY", "n", "5"}, Reply{Kind: ':', Int: 5, Value: []byte{}}},
		{[]string{"INCR", "k"}, Reply{Kind: '-', Value: []byte("ERR value is not an integer or out of range")}},
		{[]string{"SET", "big", string(make([]byte, 100000))}, Reply{Kind: '+', Value: []byte("OK")}},
		{[]string{"STRLEN", "big"}, Reply{Kind: ':', Int: 100000, Value: []byte{}}},
	}
	for i, c := range cmds {
		args := make([][]byte, len(c.args))
		for j, a := range c.args {
			args[j] = []byte(a)
		}
		if !l.conn.Do(rec, i, args...) {
			t.Fatalf("command %d refused", i)
		}
	}
	l.until(func() bool { return len(rec.replies) == len(cmds) })
	for i, c := range cmds {
		got := rec.replies[i]
		if got.Kind != c.want.Kind || string(got.Value) != string(c.want.Value) || got.Int != c.want.Int || got.Nil != c.want.Nil || got.Err != nil {
			t.Errorf("%v: got %+v, want %+v", c.args, got, c.want)
		}
	}
	// Redis ends the connection: the command in flight fails.
	l.conn.Do(rec, 100, []byte("QUIT"))
	l.conn.Do(rec, 101, []byte("GET"), []byte("k"))
	l.until(func() bool { return rec.replies[101].Err != nil })
	if l.conn.Do(rec, 102, []byte("GET"), []byte("k")) {
		t.Fatal("a command was queued on a connection that just broke")
	}
}

// TestLogin connects to a real Redis that requires a password: with the
// right one the commands run, with a wrong one the connection fails them
// and stays down, with a password that cannot be read it is never dialled.
func TestLogin(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("", "s3cret"))
	tests := []struct {
		name    string
		auth    func() ([][]byte, error)
		wantErr bool
	}{
		{"the password", func() ([][]byte, error) { return [][]byte{[]byte("AUTH"), []byte("s3cret")}, nil }, false},
		{"a wrong password", func() ([][]byte, error) { return [][]byte{[]byte("AUTH"), []byte("guess")}, nil }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoop(t, srv.Addr())
			l.conn.SetLogin(tc.auth)
			rec := &recorder{replies: map[int]Reply{}}
			if !l.conn.Do(rec, 1, []byte("SET"), []byte("k"), []byte("v")) {
				t.Fatal("command refused")
			}
			l.until(func() bool { return len(rec.replies) == 1 })
			got := rec.replies[1]
			switch {
			case tc.wantErr && (got.Err == nil || !strings.Contains(got.Err.Error(), "WRONGPASS")):
				t.Fatalf("SET after a wrong AUTH: %+v, want the connection failed with WRONGPASS", got)
			case !tc.wantErr && (got.Err != nil || got.Kind != '+'):
				t.Fatalf("SET after AUTH: %+v, want OK", got)
			}
			if tc.wantErr && l.conn.FD() >= 0 {
				t.Fatal("the connection stayed up after a refused login")
			}
		})
	}
	l := newLoop(t, srv.Addr())
	l.conn.SetLogin(func() ([][]byte, error) { return nil, errors.New("cannot read the password file") })
	if l.conn.Do(&recorder{replies: map[int]Reply{}}, 1, []byte("PING")) {
		t.Fatal("a command was queued though the login could not be read")
	}
}
