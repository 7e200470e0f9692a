//go:build linux

package redispipe

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// loop is a test's event loop over one connection: its epoll watches the
// connection's socket and an eventfd that wakes it for posted functions.
type loop struct {
	t      *testing.T
	epfd   int
	wakefd int
	conn   *Conn
	mu     sync.Mutex // guards posted
	posted []func()
}

func newLoop(t *testing.T, addr string, opts ...Option) *loop {
	t.Helper()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(epfd); _ = unix.Close(wakefd) })
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}); err != nil {
		t.Fatal(err)
	}
	l := &loop{t: t, epfd: epfd, wakefd: wakefd}
	opts = append([]Option{WithPrelude([][]byte{[]byte("CLIENT"), []byte("SETNAME"), []byte("redispipe-test")})}, opts...)
	l.conn = New(addr, func(old, fd int) error {
		if old >= 0 {
			_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, old, nil)
		}
		if fd < 0 {
			return nil
		}
		return unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLET, Fd: int32(fd)})
	}, l.post, opts...)
	t.Cleanup(l.conn.Close)
	return l
}

// post queues f for the loop and wakes it; any goroutine may call it.
func (l *loop) post(f func()) {
	l.mu.Lock()
	l.posted = append(l.posted, f)
	l.mu.Unlock()
	_, _ = unix.Write(l.wakefd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
}

// runPosted runs the functions posted so far, on the loop's goroutine.
func (l *loop) runPosted() {
	var buf [8]byte
	_, _ = unix.Read(l.wakefd, buf[:])
	l.mu.Lock()
	posted := l.posted
	l.posted = nil
	l.mu.Unlock()
	for _, f := range posted {
		f()
	}
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
		l.runPosted()
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
	checkPipeline(t, newLoop(t, srv.Addr()))
}

// checkPipeline sends a pipeline on l's connection and checks every kind
// of reply, in order, then that Redis ending the connection fails the
// command in flight and the next command is refused.
func checkPipeline(t *testing.T, l *loop) {
	t.Helper()
	rec := &recorder{replies: map[int]Reply{}}
	cmds := []struct {
		args []string
		want Reply
	}{
		{[]string{"FLUSHALL"}, Reply{Kind: '+', Value: []byte("OK")}},
		{[]string{"SET", "k", "v"}, Reply{Kind: '+', Value: []byte("OK")}},
		{[]string{"GET", "k"}, Reply{Kind: '$', Value: []byte("v")}},
		{[]string{"GET", "absent"}, Reply{Kind: '$', Nil: true, Value: []byte{}}},
		{[]string{"INCRBY", "n", "5"}, Reply{Kind: ':', Int: 5, Value: []byte{}}},
		{[]string{"INCR", "k"}, Reply{Kind: '-', Value: []byte("ERR value is not an integer or out of range")}},
		{[]string{"SET", "big", strings.Repeat("b", 100000)}, Reply{Kind: '+', Value: []byte("OK")}},
		{[]string{"STRLEN", "big"}, Reply{Kind: ':', Int: 100000, Value: []byte{}}},
		{[]string{"GET", "big"}, Reply{Kind: '$', Value: []byte(strings.Repeat("b", 100000))}},
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
			t.Errorf("%.40v: got %.80v, want %.80v", c.args, got, c.want)
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
			l := newLoop(t, srv.Addr(), WithLogin(tc.auth))
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
	l := newLoop(t, srv.Addr(), WithLogin(func() ([][]byte, error) { return nil, errors.New("cannot read the password file") }))
	if l.conn.Do(&recorder{replies: map[int]Reply{}}, 1, []byte("PING")) {
		t.Fatal("a command was queued though the login could not be read")
	}
}

// TestExpire pauses Redis under a connection with commands waiting: the
// connection is not expired before its bound, then it is, failing the
// commands waiting with why; once Redis resumes, the connection is
// dialled again. A connection with nothing waiting never expires.
func TestExpire(t *testing.T) {
	srv := redistest.Start(t)
	l := newLoop(t, srv.Addr())
	rec := &recorder{replies: map[int]Reply{}}
	l.conn.Do(rec, 1, []byte("SET"), []byte("k"), []byte("v"))
	l.until(func() bool { return len(rec.replies) == 1 })
	if l.conn.Expire(time.Now().Add(time.Hour), time.Second) {
		t.Fatal("a connection with nothing waiting expired")
	}
	srv.Pause()
	l.conn.Do(rec, 2, []byte("GET"), []byte("k"))
	l.conn.Flush()
	if l.conn.Expire(time.Now(), time.Minute) {
		t.Fatal("the connection expired before its bound")
	}
	if !l.conn.Expire(time.Now().Add(2*time.Minute), time.Minute) {
		t.Fatal("the connection did not expire past its bound")
	}
	if err := rec.replies[2].Err; err == nil || !strings.Contains(err.Error(), "answered nothing") {
		t.Fatalf("GET on the expired connection: %+v, want an error saying Redis answered nothing", rec.replies[2])
	}
	srv.Resume()
	poll.Until(t, "the connection dialled again", func() bool { return l.conn.Do(rec, 3, []byte("GET"), []byte("k")) })
	l.until(func() bool { return len(rec.replies) == 3 })
	if got := rec.replies[3]; got.Err != nil || string(got.Value) != "v" {
		t.Fatalf("GET after Redis resumed: %+v, want v", got)
	}
}
