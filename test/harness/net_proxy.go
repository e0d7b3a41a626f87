package harness

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// ConnectProxy is an HTTP CONNECT proxy, as the one Liqo's in-band peering dials its provider through
// (the identity kubeconfig's proxy-url, pkg/utils/kubeconfig GenerateKubeconfig): it tunnels a CONNECT to
// host:port to the address Routes maps it to, and refuses any other.
type ConnectProxy struct {
	// Addr is the host:port it listens on.
	Addr string

	mu       sync.Mutex
	routes   map[string]string
	requests []string
	open     map[net.Conn]bool
}

// StartConnectProxy listens on a local port until the test ends, tunnelling each CONNECT target in routes
// to its address.
func StartConnectProxy(tb testing.TB, routes map[string]string) *ConnectProxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &ConnectProxy{Addr: l.Addr().String(), routes: routes, open: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		for c := range p.open { // a client's idle keep-alive connection would hold its tunnel open
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.open[conn] = true
			p.mu.Unlock()
			wg.Go(func() { p.serve(conn) })
		}
	})
	return p
}

// Requests are the CONNECT targets it was asked for, in order.
func (p *ConnectProxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// serve answers one client connection: one CONNECT, then the tunnel until either side closes.
func (p *ConnectProxy) serve(conn net.Conn) {
	defer func() {
		_ = conn.Close()
		p.mu.Lock()
		delete(p.open, conn)
		p.mu.Unlock()
	}()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.requests = append(p.requests, req.Host)
	to, ok := p.routes[req.Host]
	p.mu.Unlock()
	if req.Method != http.MethodConnect || !ok {
		_, _ = io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	upstream, err := net.Dial("tcp", to)
	if err != nil {
		_, _ = io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer upstream.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
	<-done
}
