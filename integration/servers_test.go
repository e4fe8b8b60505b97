package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/internal/fcgi"
	"github.com/ephpm/ephpm/internal/redistest"
	"github.com/ephpm/ephpm/shm"
)

// A server is PHP serving requests from several processes, started for one
// test: php-fpm, php-cgi with PHP_FCGI_CHILDREN, or Apache's prefork MPM
// with mod_php. Its workers may run as another user (Apache's children as
// www-data when the test is root): dir is a directory every worker can
// read, for the scripts (server.script) and barrier files. do sends one GET
// request for the script file with a query string and a session cookie
// ("" for none) and returns the body.
type server struct {
	dir string
	do  func(script, query, sid string) (string, error)
}

// workerDir is a directory of the test that every user can read.
func workerDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ephpm-it-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// script writes a PHP script every worker can read.
func (s server) script(t *testing.T, name, code string) string {
	path := filepath.Join(s.dir, name)
	require.NoError(t, os.WriteFile(path, []byte(code), 0o644))
	return path
}

// fcgiGet sends requests to the FastCGI server at network/addr.
func fcgiGet(network, addr string) func(script, query, sid string) (string, error) {
	return func(script, query, sid string) (string, error) {
		params := map[string]string{"SCRIPT_FILENAME": script, "REQUEST_METHOD": "GET", "QUERY_STRING": query}
		if sid != "" {
			params["HTTP_COOKIE"] = "PHPSESSID=" + sid
		}
		resp, err := fcgi.Do(network, addr, params, 10*time.Minute) // a hang catch
		if err != nil {
			return "", err
		}
		return string(resp.Body), nil
	}
}

func fpmServer(t *testing.T, n int, ini map[string]string) server {
	return server{dir: workerDir(t), do: fcgiGet("unix", fpm(t, n, ini))}
}

// stopGroup ends the process group cmd leads with SIGTERM when the test
// ends, and waits for its leader.
func stopGroup(t *testing.T, cmd *exec.Cmd) {
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	})
}

// listening waits until something accepts connections on addr.
func listening(t *testing.T, addr string, log func() string) {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); { // a hang catch
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s: %s", addr, log())
}

// removeSegment removes the files of segment name of user uid (shm.Files).
func removeSegment(name string, uid int) {
	for _, f := range shm.Files("", name, uid) {
		os.Remove(f)
	}
}

// removeNewSegment removes the files of segment name of user uid when the
// test ends, unless it was there before the test (a server of this
// machine's may use it).
func removeNewSegment(t *testing.T, name string, uid int) {
	if _, err := os.Lstat(shm.PathOf("", name, uid)); errors.Is(err, os.ErrNotExist) {
		t.Cleanup(func() { removeSegment(name, uid) })
	}
}

// cgiServer starts php-cgi as a FastCGI server with n children
// (PHP_FCGI_CHILDREN), the extension loaded with ini. Its default segment
// is the user's "cgi" one.
func cgiServer(t *testing.T, n int, ini map[string]string) server {
	bin := lookPath(t, "php-cgi8.2", "php-cgi")
	so := extension(t)
	removeNewSegment(t, "cgi", os.Geteuid())
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	args := []string{"-n", "-b", addr, "-d", "extension=" + so}
	for k, v := range ini {
		args = append(args, "-d", k+"="+v)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PHP_FCGI_CHILDREN="+strconv.Itoa(n), "PHP_FCGI_MAX_REQUESTS=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dir := workerDir(t)
	stderr, err := os.Create(filepath.Join(dir, "php-cgi.log"))
	require.NoError(t, err)
	defer stderr.Close() // php-cgi keeps its own descriptor
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	stopGroup(t, cmd)
	listening(t, addr, func() string { b, _ := os.ReadFile(stderr.Name()); return string(b) })
	return server{dir: dir, do: fcgiGet("tcp", addr)}
}

// apacheServer starts Apache in the foreground with the prefork MPM and n
// children, mod_php loading the extension with ini (its php.ini in
// PHPINIDir). As root, the children run as www-data, as Debian's Apache
// does. Its default segment is that user's "apache" one.
func apacheServer(t *testing.T, n int, ini map[string]string) server {
	bin := lookPath(t, "apache2", "/usr/sbin/apache2")
	const modules = "/usr/lib/apache2/modules/"
	for _, m := range []string{"mod_mpm_prefork.so", "mod_authz_core.so", "libphp8.2.so"} {
		if _, err := os.Stat(modules + m); err != nil {
			t.Skipf("%s%s is not installed (apache2-bin, libapache2-mod-php8.2)", modules, m)
		}
	}
	dir := workerDir(t)
	uid, user := os.Geteuid(), ""
	if uid == 0 {
		uid, user = 33, "User www-data\nGroup www-data\n"
	}
	removeNewSegment(t, "apache", uid)
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	conf := fmt.Sprintf(`ServerRoot %[1]s
LoadModule mpm_prefork_module %[2]smod_mpm_prefork.so
LoadModule authz_core_module %[2]smod_authz_core.so
LoadModule php_module %[2]slibphp8.2.so
ServerName 127.0.0.1
Listen %[3]s
PidFile %[1]s/httpd.pid
ErrorLog %[1]s/error.log
DefaultRuntimeDir %[1]s
%[4]sDocumentRoot %[1]s
<Directory />
  Require all granted
</Directory>
<FilesMatch "\.php$">
  SetHandler application/x-httpd-php
</FilesMatch>
PHPINIDir %[1]s
StartServers %[5]d
MinSpareServers %[5]d
MaxSpareServers %[5]d
ServerLimit %[5]d
MaxRequestWorkers %[5]d
MaxConnectionsPerChild 0
KeepAlive Off
ListenBacklog 1024
`, dir, modules, addr, user, n)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "httpd.conf"), []byte(conf), 0o644))
	// The children may not reach the build (a clone under /root): they load
	// a copy in the document root, libephpm.so beside ephpm.so as built.
	so := filepath.Join(dir, "ephpm.so")
	for _, f := range []string{"ephpm.so", "libephpm.so"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(extension(t)), f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o755))
	}
	phpIni := "extension=" + so + "\n"
	for k, v := range ini {
		phpIni += k + "=\"" + v + "\"\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "php.ini"), []byte(phpIni), 0o644))
	cmd := exec.Command(bin, "-f", filepath.Join(dir, "httpd.conf"), "-DFOREGROUND")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	stopGroup(t, cmd)
	log := func() string { b, _ := os.ReadFile(filepath.Join(dir, "error.log")); return string(b) }
	listening(t, addr, log)
	client := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}} // a hang catch
	return server{dir: dir, do: func(script, query, sid string) (string, error) {
		rel, err := filepath.Rel(dir, script)
		if err != nil || strings.HasPrefix(rel, "..") {
			return "", fmt.Errorf("%s is not under the document root %s", script, dir)
		}
		req, _ := http.NewRequest("GET", "http://"+addr+"/"+rel+"?"+query, nil)
		if sid != "" {
			req.Header.Set("Cookie", "PHPSESSID="+sid)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("%s: %s %s", rel, resp.Status, body)
		}
		return string(body), err
	}}
}

// php-cgi with 20 and 64 children (PHP_FCGI_CHILDREN) and Apache's prefork
// MPM with 20 and 64 children, with no ephpm.* setting (the user's "cgi"
// and "apache" segments): their workers released together for one lock
// have one winner every round, and 100 concurrent requests on one session
// cookie over 8 workers keep all 100 writes.
func TestCGIWorkersShareLocksAndSessions(t *testing.T) {
	serverShares(t, cgiServer)
}

func TestApacheWorkersShareLocksAndSessions(t *testing.T) {
	serverShares(t, apacheServer)
}

func serverShares(t *testing.T, start func(t *testing.T, n int, ini map[string]string) server) {
	for _, n := range []int{20, 64} {
		t.Run(fmt.Sprintf("%d workers race", n), func(t *testing.T) {
			race(t, start(t, n, map[string]string{}), n, raceRounds(), "shm")
		})
	}
	t.Run("8 workers, 100 session requests", func(t *testing.T) {
		sessionRequests(t, start(t, 8, sessionIni()), "shm")
	})
}
