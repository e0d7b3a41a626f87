package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
)

// Outage stands between a client and the API server: a TCP proxy on a fixed loopback address that
// forwards to the API server, and that a test can take down (every connection cut, new ones refused)
// and bring back on the same address. It is the nearest thing to restarting kube-apiserver that envtest
// allows: envtest's APIServer.Stop discards its certificate authority and the users provisioned with it,
// so a restarted API server would present new certificates and refuse the old client credentials (see
// APIServer.setProcessState and Stop in controller-runtime's pkg/internal/testing/controlplane).
type Outage struct {
	// Addr is the proxy's address; Kubeconfig an admin kubeconfig that goes through it.
	Addr, Kubeconfig string

	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

// NewOutage starts a proxy to the API server and writes a kubeconfig that uses it.
func (e *Env) NewOutage(name string) (*Outage, error) {
	addr, err := FreeLocalAddr()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's address %q: %w", e.Config.Host, err)
	}
	o := &Outage{Addr: addr, target: u.Host, conns: map[net.Conn]bool{}}
	data, err := os.ReadFile(e.KubeconfigPath)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(data, []byte(o.target)) {
		return nil, fmt.Errorf("the kubeconfig does not name the API server %s", o.target)
	}
	o.Kubeconfig = filepath.Join(e.dir, name+".kubeconfig")
	if err := os.WriteFile(o.Kubeconfig, bytes.ReplaceAll(data, []byte(o.target), []byte(addr)), 0o600); err != nil {
		return nil, err
	}
	if err := o.Up(); err != nil {
		return nil, err
	}
	e.Go(func(ctx context.Context) error {
		<-ctx.Done()
		o.Down()
		return nil
	})
	return o, nil
}

// Up (re)opens the proxy on its address.
func (o *Outage) Up() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("reopening %s: %w", o.Addr, err)
	}
	o.ln = ln
	go o.accept(ln)
	return nil
}

// Down cuts every connection through the proxy and refuses new ones until Up.
func (o *Outage) Down() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln != nil {
		_ = o.ln.Close()
		o.ln = nil
	}
	for c := range o.conns {
		_ = c.Close()
		delete(o.conns, c)
	}
}

func (o *Outage) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed by Down
		}
		go o.forward(c)
	}
}

func (o *Outage) forward(c net.Conn) {
	up, err := net.Dial("tcp", o.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !o.track(c, up) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	o.untrack(c, up)
}

func (o *Outage) track(conns ...net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln == nil { // taken down meanwhile
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		o.conns[c] = true
	}
	return true
}

func (o *Outage) untrack(conns ...net.Conn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(o.conns, c)
	}
}
