package web

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// The guard in front of every request, in this order:
//   - Host must be the address listened on (127.0.0.1:port or
//     localhost:port): a page of another site that a DNS name was rebound
//     to 127.0.0.1 sends its own name;
//   - the token, from ?token= (the printed URL; it is then kept in a
//     SameSite=Strict, HttpOnly cookie and the address bar is cleaned), the
//     cookie or the X-Intercom-Token header, compared in constant time;
//   - a request that changes anything (not GET or HEAD) must carry
//     X-Intercom-Token and, when it has an Origin, the page's own origin;
//   - every answer has a strict Content-Security-Policy, no referrer, no
//     framing and no sniffing.

const (
	cookieName  = "intercom_web"
	tokenHeader = "X-Intercom-Token"
	csp         = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		if !s.hostAllowed(r.Host) {
			http.Error(w, "forbidden: unexpected Host", http.StatusForbidden)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
			if !s.tokenOK(q) {
				http.Error(w, "forbidden: wrong token", http.StatusForbidden)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther) // the token leaves the address bar
			return
		}
		token := r.Header.Get(tokenHeader)
		if token == "" {
			if c, err := r.Cookie(cookieName); err == nil {
				token = c.Value
			}
		}
		if !s.tokenOK(token) {
			http.Error(w, "forbidden: open the URL intercom web printed (with its token)", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
				http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
				return
			}
			if !s.tokenOK(r.Header.Get(tokenHeader)) {
				http.Error(w, "forbidden: "+tokenHeader+" header required", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(host string) bool {
	_, port, ok := strings.Cut(s.host, ":")
	return ok && (host == s.host || host == "localhost:"+port)
}

func (s *Server) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}
