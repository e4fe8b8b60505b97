package redisstore

import (
	"net/url"
	"strings"
)

// mask stands where redact removed a secret.
const mask = "xxxxx"

// redact returns a backend URL with its secrets masked, for messages: the
// user info (everything from the start of the authority to the last '@'),
// and the value of every query parameter whose name contains "password"
// (password, sentinel_password). It reads the URL as text, not through a
// URL parser, so that a URL too malformed to parse is masked as well; it
// masks too much rather than too little (an '@' in a later parameter moves
// the end of the user info there).
//
// The extension's phpinfo() displayer applies the same rule
// (ephpm_redact_url in php-ext/ephpm.c).
func redact(raw string) string {
	head, query, hasQuery := strings.Cut(raw, "?")
	if hasQuery {
		pairs := strings.Split(query, "&")
		for i, pair := range pairs {
			name, _, hasValue := strings.Cut(pair, "=")
			if decoded, err := url.QueryUnescape(name); err == nil {
				name = decoded
			}
			if hasValue && strings.Contains(strings.ToLower(name), "password") {
				pairs[i] = pair[:strings.Index(pair, "=")+1] + mask
			}
		}
		raw = head + "?" + strings.Join(pairs, "&")
	}
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	} else if i := strings.Index(raw, ":"); i >= 0 {
		start = i + 1
	}
	if at := strings.LastIndex(raw, "@"); at >= start {
		raw = raw[:start] + mask + raw[at:]
	}
	return raw
}

// Redact is a backend URL as a message may show it: its user info and
// every parameter whose name holds "password" as xxxxx.
func Redact(raw string) string { return redact(raw) }
