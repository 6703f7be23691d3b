// Command hostilepeer is the attacker of the bridge's hostile-peer tests: a
// host with a valid certificate that speaks raw NATS instead of running
// intercom-bridge. As a client it joins a serving bridge (or a team's NATS)
// as its host; as a server it plays a malicious hub that a victim's bridge
// joins. It reads one JSON command per line on stdin and answers each with
// one JSON line on stdout; the e2e tests drive it and judge the victim.
package main

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

type config struct {
	mode, addr, listen   string
	cert, key, ca        string
	name, victim, server string
	tlsFirst             bool
}

// cmd is one command from the test.
type cmd struct {
	Do      string          `json:"do"`
	Subject string          `json:"subject,omitempty"`
	Reply   string          `json:"reply,omitempty"`
	Op      string          `json:"op,omitempty"`
	From    string          `json:"from,omitempty"` // claimed source host (server mode)
	Body    json.RawMessage `json:"body,omitempty"`
	Data    string          `json:"data,omitempty"`
	N       int             `json:"n,omitempty"`
	Size    int             `json:"size,omitempty"`
	Rows    int             `json:"rows,omitempty"`
	Name    string          `json:"name,omitempty"`
	Cwd     string          `json:"cwd,omitempty"`
	Also    string          `json:"also,omitempty"` // presence: one more row, of this name
	Wait    int             `json:"wait_ms,omitempty"`
}

type attacker struct {
	cfg       config
	nc        *nats.Conn
	srv       *server.Server
	errs      chan error // async errors (permission violations) of nc
	mu        sync.Mutex
	down      error                         // why nc closed, once it did
	answering map[string]*nats.Subscription // the victim's requests answered, by subject
	last      []byte                        // the last request answered
	watched   map[string]int                // messages received on watched subjects
}

func main() {
	var c config
	flag.StringVar(&c.mode, "mode", "client", "client (join as --name) or server (a malicious hub)")
	flag.StringVar(&c.addr, "addr", "", "client: the serving bridge's host:port, or nats:// / tls:// URLs")
	flag.StringVar(&c.listen, "listen", "127.0.0.1:0", "server: address to listen on")
	flag.StringVar(&c.cert, "cert", "", "certificate")
	flag.StringVar(&c.key, "key", "", "key")
	flag.StringVar(&c.ca, "ca", "", "CA certificate")
	flag.StringVar(&c.name, "name", "", "the attacker's host (its certificate's name)")
	flag.StringVar(&c.victim, "victim", "", "the victim host")
	flag.StringVar(&c.server, "server-name", "", "client: the name in the server's certificate")
	flag.BoolVar(&c.tlsFirst, "tls-first", true, "client: TLS handshake first (an intercom-bridge serve)")
	flag.Parse()
	a := &attacker{cfg: c, errs: make(chan error, 1024), answering: map[string]*nats.Subscription{}, watched: map[string]int{}}
	var err error
	if c.mode == "server" {
		err = a.serve()
	} else {
		err = a.join()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostilepeer:", err)
		os.Exit(1)
	}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var c cmd
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			_ = out.Encode(map[string]any{"error": "bad command: " + err.Error()})
			continue
		}
		_ = out.Encode(a.run(c))
	}
}

func (a *attacker) tls(server bool) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(a.cfg.cert, a.cfg.key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(a.cfg.ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("bad CA")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair}}
	if server {
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	} else {
		cfg.RootCAs, cfg.ServerName = pool, a.cfg.server
	}
	return cfg, nil
}

func (a *attacker) url() string {
	if strings.Contains(a.cfg.addr, "://") {
		return a.cfg.addr
	}
	return "tls://" + a.cfg.addr
}

// dial makes one more connection with the attacker's certificate.
func (a *attacker) dial(name string, errs chan error) (*nats.Conn, error) {
	cfg, err := a.tls(false)
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Secure(cfg), nats.Name(name), nats.NoReconnect(), nats.Timeout(5 * time.Second),
		nats.CustomInboxPrefix("icb.inbox." + tok(a.cfg.name)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		})}
	if a.cfg.tlsFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	return nats.Connect(a.url(), opts...)
}

func (a *attacker) join() error {
	nc, err := a.dial("hostilepeer-"+a.cfg.name, a.errs)
	if err != nil {
		return err
	}
	nc.SetClosedHandler(func(c *nats.Conn) {
		a.mu.Lock()
		a.down = c.LastError()
		if a.down == nil {
			a.down = errors.New("closed")
		}
		a.mu.Unlock()
	})
	a.nc = nc
	return nil
}

// serve runs a malicious hub: TLS with client certificates from the CA, and
// nothing else (no users, no permissions, no limits).
func (a *attacker) serve() error {
	cfg, err := a.tls(true)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(a.cfg.listen)
	p := 0
	fmt.Sscan(port, &p)
	if p == 0 {
		p = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{Host: host, Port: p, TLS: true, TLSVerify: true, TLSConfig: cfg,
		TLSHandshakeFirst: true, NoSigs: true, NoLog: true, NoSystemAccount: true, MaxPayload: 64 << 20})
	if err != nil {
		return err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return errors.New("server not ready")
	}
	a.srv = srv
	nc, err := nats.Connect("", nats.InProcessServer(srv), nats.CustomInboxPrefix("icb.inbox."+tok(a.cfg.name)))
	if err != nil {
		return err
	}
	a.nc = nc
	fmt.Println(`{"listening":"` + srv.Addr().String() + `"}`)
	return nil
}

func tok(h string) string { return strings.ReplaceAll(h, ".", "_") }

// reqSubject is the subject of a request from host from to the victim.
func (a *attacker) reqSubject(from, op string) string {
	if from == "" {
		from = a.cfg.name
	}
	return "icb.req." + tok(a.cfg.victim) + "." + tok(from) + "." + op
}

// permissionError waits a little for an async error about subject.
func (a *attacker) permissionError(subject string, wait time.Duration) error {
	t := time.After(wait)
	for {
		select {
		case err := <-a.errs:
			if strings.Contains(err.Error(), "ermission") && strings.Contains(err.Error(), subject) {
				return err
			}
		case <-t:
			return nil
		}
	}
}

func (a *attacker) run(c cmd) map[string]any {
	wait := time.Duration(max(c.Wait, 1500)) * time.Millisecond
	switch c.Do {
	case "subscribe":
		// Refused, or what it received within wait.
		var got atomic.Int64
		sub, err := a.nc.Subscribe(c.Subject, func(*nats.Msg) { got.Add(1) })
		if err != nil {
			return map[string]any{"refused": true, "error": err.Error()}
		}
		defer sub.Unsubscribe()
		_ = a.nc.Flush()
		if perr := a.permissionError(c.Subject, wait); perr != nil {
			return map[string]any{"refused": true, "error": perr.Error(), "received": got.Load()}
		}
		return map[string]any{"refused": false, "received": got.Load()}
	case "publish":
		data := []byte(c.Data)
		if c.Size > 0 {
			data = random(c.Size)
		}
		for range max(c.N, 1) {
			if err := a.nc.Publish(c.Subject, data); err != nil {
				return map[string]any{"refused": true, "error": err.Error()}
			}
		}
		_ = a.nc.Flush()
		if perr := a.permissionError(c.Subject, wait); perr != nil {
			return map[string]any{"refused": true, "error": perr.Error()}
		}
		return map[string]any{"refused": false}
	case "request":
		return a.request(c, wait)
	case "answer":
		return a.answer(c)
	case "watch", "watched", "last-request":
		return a.observe(c, wait)
	case "flood":
		return a.flood(c)
	case "connections":
		return a.connections(c.N, wait)
	case "raw-oversize":
		return a.rawOversize(c.Size)
	case "presence":
		return a.presence(c)
	case "wait-closed":
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			a.mu.Lock()
			down := a.down
			a.mu.Unlock()
			if down != nil || a.nc.IsClosed() {
				return map[string]any{"closed": true, "error": fmt.Sprint(down)}
			}
			time.Sleep(20 * time.Millisecond)
		}
		return map[string]any{"closed": false}
	case "reconnect":
		nc, err := a.dial("hostilepeer-again", make(chan error, 16))
		if err != nil {
			return map[string]any{"connected": false, "error": err.Error()}
		}
		defer nc.Close()
		if err := nc.FlushTimeout(wait); err != nil {
			return map[string]any{"connected": false, "error": err.Error()}
		}
		return map[string]any{"connected": true}
	case "wait-client":
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			if a.srv != nil && a.srv.NumClients() >= 2 {
				return map[string]any{"clients": a.srv.NumClients()}
			}
			time.Sleep(20 * time.Millisecond)
		}
		return map[string]any{"clients": 0}
	}
	return map[string]any{"error": "unknown command " + c.Do}
}

// request sends one request (to the victim from c.From, or to c.Subject
// with reply c.Reply) and returns the victim's reply envelope.
func (a *attacker) request(c cmd, wait time.Duration) map[string]any {
	subject := c.Subject
	if subject == "" {
		subject = a.reqSubject(c.From, c.Op)
	}
	if c.Reply != "" { // a reply subject of our choosing: does anything answer there?
		sub, err := a.nc.SubscribeSync(c.Reply)
		answered := false
		if err == nil {
			_ = a.nc.Flush()
			_ = a.nc.PublishRequest(subject, c.Reply, c.Body)
			_, err = sub.NextMsg(wait)
			answered = err == nil
			_ = sub.Unsubscribe()
		}
		return map[string]any{"answered": answered}
	}
	msg, err := a.nc.Request(subject, c.Body, wait)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var env map[string]any
	if err := json.Unmarshal(msg.Data, &env); err != nil {
		return map[string]any{"error": "unreadable reply: " + err.Error()}
	}
	return map[string]any{"reply": env}
}

// flood sends c.N deliveries of random text of c.Size bytes to c.Name, 8 at
// a time, and counts the answers by error code ("ok" for stored).
func (a *attacker) flood(c cmd) map[string]any {
	codes := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				text := string(random(c.Size))
				body, _ := json.Marshal(map[string]any{"host": a.cfg.name, "message": map[string]any{
					"id": fmt.Sprintf("flood%d%x", i, random(4)), "from": map[string]string{"id": "0123456789abcdef0123456789abcdef", "name": "flooder", "cwd": "/x"},
					"to": c.Name, "text": text, "delivery": "steer"}})
				code := "ok"
				msg, err := a.nc.Request(a.reqSubject(c.From, "deliver"), body, 30*time.Second)
				if err != nil {
					code = "transport: " + err.Error()
				} else {
					var env struct {
						Error *struct{ Code string } `json:"error"`
					}
					if json.Unmarshal(msg.Data, &env) == nil && env.Error != nil {
						code = env.Error.Code
					}
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	for i := range c.N {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return map[string]any{"codes": codes}
}

// connections opens n more connections and counts those the server kept.
func (a *attacker) connections(n int, wait time.Duration) map[string]any {
	var conns []*nats.Conn
	refused := 0
	for i := range n {
		nc, err := a.dial(fmt.Sprintf("hostilepeer-extra-%d", i), make(chan error, 16))
		if err != nil {
			refused++
			continue
		}
		conns = append(conns, nc)
	}
	time.Sleep(wait)
	kept := 0
	for _, nc := range conns {
		if nc.FlushTimeout(2*time.Second) == nil && nc.IsConnected() {
			kept++
		}
		nc.Close()
	}
	return map[string]any{"kept": kept, "refused": refused}
}

// rawOversize speaks the protocol by hand: a PUB bigger than the server's
// max_payload, as a client that ignores INFO would send it.
func (a *attacker) rawOversize(size int) map[string]any {
	cfg, err := a.tls(false)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	addr := strings.TrimPrefix(strings.TrimPrefix(a.cfg.addr, "tls://"), "nats://")
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(20 * time.Second))
	c := tls.Client(raw, cfg)
	r := bufio.NewReader(c)
	info, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(info, "INFO") {
		return map[string]any{"error": fmt.Sprintf("no INFO: %q %v", info, err)}
	}
	subject := a.reqSubject("", "deliver")
	fmt.Fprintf(c, "CONNECT {\"verbose\":false,\"protocol\":1}\r\nPUB %s %d\r\n", subject, size)
	go func() { _, _ = c.Write(append(random(size), '\r', '\n')) }()
	var lines []string
	for {
		l, err := r.ReadString('\n')
		if l != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
		if err != nil {
			break
		}
	}
	joined := strings.Join(lines, " | ")
	return map[string]any{"refused": strings.Contains(joined, "Maximum Payload"), "server_said": joined}
}

// presence publishes c.N presence broadcasts with c.Rows fake sessions each
// (named c.Name-<i>, in c.Cwd, and one named c.Also), as host c.From
// (default: the attacker).
func (a *attacker) presence(c cmd) map[string]any {
	from := c.From
	if from == "" {
		from = a.cfg.name
	}
	rows := make([]map[string]any, c.Rows)
	for i := range rows {
		rows[i] = map[string]any{"id": fmt.Sprintf("%032x", i+1), "name": fmt.Sprintf("%s%d", c.Name, i), "target": "x",
			"cwd": c.Cwd, "project": "/p", "status": "idle", "state": "idle", "accepts_asks": true, "connected": true,
			"last_seen": time.Now().UTC()}
	}
	if c.Also != "" {
		rows = append(rows, map[string]any{"id": fmt.Sprintf("%032x", len(rows)+1), "name": c.Also, "target": "x", "cwd": "/also",
			"status": "idle", "state": "idle", "connected": true, "last_seen": time.Now().UTC()})
	}
	data, _ := json.Marshal(map[string]any{"v": fmt.Sprintf("%x", random(6)), "full": true, "sessions": rows})
	sent, failed := 0, ""
	subject := "icb.pres." + tok(from)
	if a.srv != nil { // a hub relays the presence (the victim reads only that)
		subject = "icb.hpres." + tok(from)
	}
	for range max(c.N, 1) {
		if err := a.nc.Publish(subject, data); err != nil {
			failed = err.Error()
			break
		}
		sent++
	}
	_ = a.nc.Flush()
	perr := a.permissionError(subject, 500*time.Millisecond)
	return map[string]any{"sent": sent, "bytes": len(data), "error": failed, "refused": perr != nil || failed != ""}
}

func random(n int) []byte {
	b := make([]byte, (n*3+3)/4)
	_, _ = rand.Read(b)
	s := base64.RawStdEncoding.EncodeToString(b)
	return []byte(s[:n])
}
