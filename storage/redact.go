package storage

import (
	"net/url"
	"regexp"
	"strings"
)

// secretParams are URL query parameters and key=value words that carry credentials in the
// SDKs' URL forms and error texts (AWS SigV4 presigned URLs, Azure SAS tokens, GCS signed URLs).
var secretParams = regexp.MustCompile(`(?i)((?:x-amz-(?:signature|credential|security-token)|sig|signature|se?cret[a-z_]*|access_?key[a-z_]*|account_?key|password|token|sas|credential)=)[^&\s"']+`)

// userinfo matches the user:password@ part of a URL in running text, up to the last "@" of
// the word: a password may hold "/", "+" and "@" (AWS secret keys hold "/" and "+").
var userinfo = regexp.MustCompile(`(://[^/@\s:]+:)[^\s]*@`)

// Redact returns s with credentials removed: the password of any user:password@ in a URL and
// the values of credential-bearing query parameters (signatures, SAS tokens, keys, passwords)
// become "REDACTED". Use it for every URL and storage error that reaches a message, a log, a
// progress line or a checkpoint file.
func Redact(s string) string {
	if !strings.ContainsAny(s, "@=") {
		return s
	}
	s = userinfo.ReplaceAllString(s, "${1}REDACTED@")
	return secretParams.ReplaceAllString(s, "${1}REDACTED")
}

// RedactURL is [Redact] for one URL, keeping its structure: the user's password and every
// credential-bearing query value are replaced.
func RedactURL(u *url.URL) string { return Redact(u.String()) }
