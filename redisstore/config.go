package redisstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrConfig is wrapped by every error in a backend URL.
var ErrConfig = errors.New("invalid Redis backend URL")

// Mode is the kind of deployment a URL names.
type Mode string

const (
	Standalone Mode = "redis"
	Cluster    Mode = "redis-cluster"
	Sentinel   Mode = "redis-sentinel"
)

// config is what a backend URL says: the client's options, the kind of
// deployment, and how to open a connection to one of its servers.
type config struct {
	// opts dial connections that wait for replies on the calling thread
	// (see threadConn): for commands, which PHP threads send.
	opts redis.UniversalOptions
	// pubsubOpts are the same but dial connections on Go's network
	// poller: for the hub's pub/sub connection, read by a background
	// goroutine, which must not hold a P while it waits (see hub).
	pubsubOpts redis.UniversalOptions
	mode       Mode
	// allowEvicting is allow_evicting_server=1: locks and sessions on a
	// server that may evict them (see Store.noEviction).
	allowEvicting bool
	// lease is lock_lease: the lease of a Bound lock (lease.go); 0: none.
	lease time.Duration
	// waitReplicas and waitTimeout are wait_replicas and wait_timeout:
	// how many replicas must acknowledge each write, within how long
	// (replicas.go); 0 replicas: no waiting.
	waitReplicas int64
	waitTimeout  time.Duration
	dial         func(ctx context.Context, addr string) (nc net.Conn, raw *threadConn, err error)
}

// parse turns a backend URL into client options.
//
//	redis://[user:password@]host:port[/db][?params]        one server over TCP
//	rediss://...                                            the same over TLS
//	unix://[user:password@]/path/to/socket[?db=N&params]    one server over a unix socket
//	redis+cluster://host:port,host2:port,...                Redis Cluster seed nodes (rediss+cluster: TLS)
//	redis+sentinel://[sentinel-user:sentinel-password@]host:port,...[/db]?master_name=NAME
//	                                                        Sentinel (rediss+sentinel: TLS);
//	                                                        password=... authenticates to the data nodes
//
// Several hosts may be listed with commas (or as addr=host:port params).
//
// params are go-redis's (dial_timeout, read_timeout, write_timeout,
// pool_size, ...) plus tls_ca, tls_cert, tls_key and tls_server_name for
// TLS. Retries are always off and max_retries is refused: a command whose
// reply was lost may have run, and retrying it (a SET NX, a release) would
// report a lock the caller holds as held by someone else.
// allow_evicting_server=1 lets locks and sessions run on a server that may
// evict them (see Store.noEviction), which is unsafe. lock_lease is the
// lease of a lock bound to its process (lease.go): a duration of at least
// MinLease (DefaultLease when not given), or 0 for none (such a lock then
// keeps its whole TTL after its process died). wait_replicas=N (default
// 0: none) makes every write wait for N replicas' acknowledgement, for at
// most wait_timeout (default DefaultWaitTimeout), and fail if they do not
// come (replicas.go); not on a Cluster URL.
//
// An error names the URL with its secrets masked (see redact), and says
// what is wrong as parsing the masked URL finds it, so that no message
// quotes a secret: url.Parse quotes the whole URL it refuses, and
// go-redis the values it refuses.
func parse(raw string) (config, error) {
	cfg, err := parseURL(raw)
	if err == nil {
		return cfg, nil
	}
	shown := redact(raw)
	_, err = parseURL(shown)
	var quoting *url.Error
	switch {
	case err == nil:
		err = errors.New("its user info or a password parameter is not valid in a URL " +
			"(percent-encode characters such as @ : / ? # & % in it)")
	case errors.As(err, &quoting):
		err = quoting.Err // the URL is named once, below
	}
	return config{}, fmt.Errorf("%w %s: %v", ErrConfig, shown, err)
}

// parseURL is parse without the care for secrets: its errors may quote
// any part of raw.
func parseURL(raw string) (config, error) {
	var none config
	u, err := url.Parse(splitHosts(raw))
	if err != nil {
		return none, err
	}
	if u.Opaque != "" {
		// redis:host reads as scheme and path, which would connect to
		// the default address.
		return none, errors.New("a backend URL is scheme://..., with two slashes")
	}
	q := u.Query()
	if q.Has("max_retries") {
		return none, errors.New("max_retries is not accepted: ephpm never retries a command whose reply was lost")
	}
	allowEvicting := false
	if q.Has("allow_evicting_server") {
		switch q.Get("allow_evicting_server") {
		case "1":
			allowEvicting = true
		case "0":
		default:
			return none, errors.New("allow_evicting_server is 1 or 0")
		}
		q.Del("allow_evicting_server")
	}
	lease := DefaultLease
	if q.Has("lock_lease") {
		d, err := time.ParseDuration(q.Get("lock_lease"))
		switch {
		case q.Get("lock_lease") == "0":
			lease = 0
		case err != nil || d < MinLease:
			return none, fmt.Errorf("lock_lease is a duration of at least %v (such as 2s), or 0 for none", MinLease)
		default:
			lease = d
		}
		q.Del("lock_lease")
	}
	waitReplicas, waitTimeout, err := parseWaitReplicas(q)
	if err != nil {
		return none, err
	}
	tlsFiles := map[string]string{}
	for _, k := range []string{"tls_ca", "tls_cert", "tls_key", "tls_server_name"} {
		if q.Has(k) {
			tlsFiles[k] = q.Get(k)
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()

	scheme, suffix, _ := strings.Cut(u.Scheme, "+")
	mode := Standalone
	switch suffix {
	case "":
	case "cluster":
		mode = Cluster
	case "sentinel":
		mode = Sentinel
	default:
		return none, fmt.Errorf("unknown scheme %q", u.Scheme)
	}
	if scheme != "redis" && scheme != "rediss" && !(scheme == "unix" && mode == Standalone) {
		return none, fmt.Errorf("unknown scheme %q (redis, rediss, unix, redis+cluster, redis+sentinel)", u.Scheme)
	}
	u.Scheme = scheme

	var o redis.UniversalOptions
	network := "tcp"
	switch mode {
	case Standalone:
		so, err := redis.ParseURL(u.String())
		if err != nil {
			return none, err
		}
		o = redis.UniversalOptions{
			Addrs: []string{so.Addr}, Username: so.Username, Password: so.Password, DB: so.DB,
			DialTimeout: so.DialTimeout, ReadTimeout: so.ReadTimeout, WriteTimeout: so.WriteTimeout,
			PoolSize: so.PoolSize, MinIdleConns: so.MinIdleConns, PoolTimeout: so.PoolTimeout,
			TLSConfig: so.TLSConfig, ClientName: so.ClientName, Protocol: so.Protocol,
		}
		network = so.Network
	case Cluster:
		co, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return none, err
		}
		o = redis.UniversalOptions{
			Addrs: co.Addrs, Username: co.Username, Password: co.Password, IsClusterMode: true,
			DialTimeout: co.DialTimeout, ReadTimeout: co.ReadTimeout, WriteTimeout: co.WriteTimeout,
			PoolSize: co.PoolSize, MinIdleConns: co.MinIdleConns, PoolTimeout: co.PoolTimeout,
			TLSConfig: co.TLSConfig, ClientName: co.ClientName, Protocol: co.Protocol,
		}
	case Sentinel:
		fo, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return none, err
		}
		if fo.MasterName == "" {
			return none, errors.New("a sentinel URL needs master_name")
		}
		o = redis.UniversalOptions{
			Addrs: fo.SentinelAddrs, MasterName: fo.MasterName,
			SentinelUsername: fo.SentinelUsername, SentinelPassword: fo.SentinelPassword,
			Username: fo.Username, Password: fo.Password, DB: fo.DB,
			DialTimeout: fo.DialTimeout, ReadTimeout: fo.ReadTimeout, WriteTimeout: fo.WriteTimeout,
			PoolSize: fo.PoolSize, MinIdleConns: fo.MinIdleConns, PoolTimeout: fo.PoolTimeout,
			TLSConfig: fo.TLSConfig, ClientName: fo.ClientName, Protocol: fo.Protocol,
		}
	}
	// go-redis reads 0 or a negative timeout as "no bound" (and a dial
	// timeout so fails every dial at once): a call on a server that stops
	// answering would then wait for good, which max_execution_time does
	// not end (NTS PHP counts CPU time). A negative pool_size panics.
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"dial_timeout", o.DialTimeout}, {"read_timeout", o.ReadTimeout},
		{"write_timeout", o.WriteTimeout}, {"pool_timeout", o.PoolTimeout}} {
		if t.d < 0 || (t.d == 0 && q.Has(t.name)) {
			return none, fmt.Errorf("%s must be a positive duration (such as 500ms or 2s): "+
				"0 or a negative one means no bound, and a call on a server that stops answering would wait for good", t.name)
		}
	}
	if o.PoolSize < 0 {
		return none, errors.New("pool_size must not be negative (0: 10 per CPU)")
	}
	if err := checkWaitReplicas(mode, waitReplicas, waitTimeout, o.ReadTimeout); err != nil {
		return none, err
	}
	o.MaxRetries = -1 // see above: never retry
	// A native release and its PUBLISH go as a pipeline (see nativeHook):
	// on the commands' own connections, not a second pool of them per
	// node and process.
	o.PipelinePoolSize = -1
	if !q.Has("dialer_retries") {
		// One dial per attempt, so a call fails within dial_timeout, not
		// five times that (the client's default).
		o.DialerRetries = 1
	}

	if len(tlsFiles) > 0 {
		if o.TLSConfig == nil {
			return none, errors.New("tls_* settings need a rediss scheme")
		}
		if err := applyTLSFiles(o.TLSConfig, tlsFiles); err != nil {
			return none, err
		}
	}
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAliveConfig: keepAlive}
	tlsConfig := o.TLSConfig
	dial := func(ctx context.Context, addr string) (net.Conn, *threadConn, error) {
		return dialConn(ctx, d, tlsConfig, network, addr, true)
	}
	ps := o
	o.Dialer = func(ctx context.Context, _, addr string) (net.Conn, error) {
		nc, _, err := dial(ctx, addr)
		return nc, err
	}
	ps.Dialer = func(ctx context.Context, _, addr string) (net.Conn, error) {
		nc, _, err := dialConn(ctx, d, tlsConfig, network, addr, false)
		return nc, err
	}
	return config{opts: o, pubsubOpts: ps, mode: mode, allowEvicting: allowEvicting, lease: lease,
		waitReplicas: waitReplicas, waitTimeout: waitTimeout, dial: dial}, nil
}

// keepAlive is go-redis's default for the connections it dials itself.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}

// splitHosts rewrites scheme://a:1,b:2,c:3/rest as scheme://a:1/rest with
// addr=b:2&addr=c:3 appended to the query, the form the client's parsers
// take: a URL's host may not hold commas.
func splitHosts(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, hosts = authority[:at+1], authority[at+1:]
	}
	list := strings.Split(hosts, ",")
	if len(list) == 1 {
		return raw
	}
	path, query, _ := strings.Cut(tail, "?")
	extra := make([]string, 0, len(list)-1)
	for _, h := range list[1:] {
		extra = append(extra, "addr="+url.QueryEscape(h))
	}
	if query != "" {
		extra = append([]string{query}, extra...)
	}
	return scheme + "://" + userinfo + list[0] + path + "?" + strings.Join(extra, "&")
}

func applyTLSFiles(c *tls.Config, files map[string]string) error {
	if name, ok := files["tls_server_name"]; ok {
		c.ServerName = name
	}
	if ca, ok := files["tls_ca"]; ok {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return fmt.Errorf("tls_ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls_ca: no certificate in %s", ca)
		}
		c.RootCAs = pool
	}
	certFile, hasCert := files["tls_cert"]
	keyFile, hasKey := files["tls_key"]
	if hasCert != hasKey {
		return errors.New("tls_cert and tls_key go together")
	}
	if hasCert {
		// Read the pair at each handshake, so a renewed certificate needs
		// no restart; check it once now so a bad path is a clear error.
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return fmt.Errorf("tls_cert/tls_key: %v", err)
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			return &pair, err
		}
	}
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	return nil
}
