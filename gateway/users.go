package gateway

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Users authenticates clients against a directory with a file per user,
// named as the user and holding its password (a Kubernetes Secret mounted
// as a volume has that shape). The directory is read at every
// authentication, so a rotated Secret applies without a restart. The user
// "default" is the one `AUTH password` names.
type Users struct {
	// Dir is the directory.
	Dir string
}

// errWrongPass is Redis' reply to a wrong user or password.
const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// check reports whether password is user's; a user without a file, or a
// directory that cannot be read, authenticates nobody.
func (u *Users) check(user, password string) (bool, error) {
	if user == "" || strings.ContainsAny(user, `/\`) || strings.HasPrefix(user, ".") {
		return false, nil
	}
	raw, err := os.ReadFile(filepath.Join(u.Dir, user))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cannot read the gateway's user %s: %w", user, err)
	}
	want := strings.TrimRight(string(raw), "\r\n")
	return subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1, nil
}

// count is the number of users, for INFO.
func (u *Users) count() int {
	entries, err := os.ReadDir(u.Dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

// authenticate runs AUTH's check for the session and returns the error
// reply, or "" when the session is now authenticated.
func (s *Server) authenticate(sess *session, user, password string) string {
	if s.cfg.Users == nil {
		if user == "default" || user == "" {
			return "" // Redis' nopass default user: any password
		}
		return errWrongPass
	}
	if user == "" {
		user = "default"
	}
	ok, err := s.cfg.Users.check(user, password)
	if err != nil {
		s.cfg.Logger.Error("cannot authenticate", "user", user, "err", err)
	}
	if !ok {
		s.stats.authFailures.Add(1)
		return errWrongPass
	}
	sess.mu.Lock()
	sess.user = user
	sess.mu.Unlock()
	return ""
}

// runAuth answers AUTH [user] password.
func runAuth(c *call, dst []byte) []byte {
	if len(c.args) > 3 {
		return appendError(dst, "ERR syntax error")
	}
	user, password := "", string(c.args[len(c.args)-1])
	if len(c.args) == 3 {
		user = string(c.args[1])
	}
	if c.srv.cfg.Users == nil && len(c.args) == 2 {
		return appendError(dst, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	}
	if e := c.srv.authenticate(c.sess, user, password); e != "" {
		return appendError(dst, e)
	}
	return appendOK(dst)
}
