package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
)

// Outage stands between a client and the API server: a TCP proxy on a fixed address (loopback, or one that
// pods on this machine reach: NewOutageOn) that
// forwards to the API server, and that a test can take down (every connection cut, new ones refused)
// and bring back on the same address. While down it keeps the address bound without listening (the
// kernel refuses connections to it), so no other process of a busy machine can take the port and answer
// in the API server's place. It is the nearest thing to restarting kube-apiserver that envtest
// allows: envtest's APIServer.Stop discards its certificate authority and the users provisioned with it,
// so a restarted API server would present new certificates and refuse the old client credentials (see
// APIServer.setProcessState and Stop in controller-runtime's pkg/internal/testing/controlplane).
type Outage struct {
	// Addr is the proxy's address; Kubeconfig an admin kubeconfig that goes through it.
	Addr, Kubeconfig string

	target string
	mu     sync.Mutex
	ln     net.Listener
	// accepting is closed when the accept loop of ln has returned.
	accepting chan struct{}
	// held is the address, bound and not listening, while the proxy is down (-1 while up).
	held  int
	conns map[net.Conn]bool
}

// NewOutage starts a proxy to the API server on a loopback address and writes a kubeconfig that uses it.
func (e *Env) NewOutage(name string) (*Outage, error) {
	return e.NewOutageOn(name, net.IPv4(127, 0, 0, 1))
}

// NewOutageOn starts a proxy to the API server on host (an address of this machine: HostAddress for one
// that pods on a real node reach, as a provider's API server is reached from the consumer's pods) and
// writes a kubeconfig that uses it.
func (e *Env) NewOutageOn(name string, host net.IP) (*Outage, error) {
	port, err := freePort(host.String())
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's address %q: %w", e.Config.Host, err)
	}
	o := &Outage{Addr: net.JoinHostPort(host.String(), strconv.Itoa(port)), target: u.Host, held: -1, conns: map[net.Conn]bool{}}
	if o.Kubeconfig, err = o.Through(e.KubeconfigPath, filepath.Join(e.dir, name+".kubeconfig")); err != nil {
		return nil, err
	}
	if err := o.Up(); err != nil {
		return nil, err
	}
	e.Go(func(ctx context.Context) error {
		<-ctx.Done()
		o.Down()
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.release()
	})
	return o, nil
}

// Through writes to path a copy of the kubeconfig at kubeconfig (which names the API server) that goes
// through the proxy instead, e.g. the binary's ServiceAccount's, and returns path. Where the proxy's host
// is not the API server's, the copy verifies the API server's certificate for the API server's host
// (tls-server-name): the proxy only forwards bytes.
func (o *Outage) Through(kubeconfig, path string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	target, _, err := net.SplitHostPort(o.target)
	if err != nil {
		return "", err
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return "", err
	}
	named := false
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil || u.Host != o.target {
			continue
		}
		u.Host, named = o.Addr, true
		c.Server = u.String()
		if host != target && c.TLSServerName == "" {
			c.TLSServerName = target
		}
	}
	if !named {
		return "", fmt.Errorf("the kubeconfig %s does not name the API server %s", kubeconfig, o.target)
	}
	return path, clientcmd.WriteToFile(*cfg, path)
}

// Up (re)opens the proxy on its address.
func (o *Outage) Up() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln != nil {
		return nil
	}
	if err := o.release(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("reopening %s: %w", o.Addr, err)
	}
	o.ln, o.accepting = ln, make(chan struct{})
	go o.accept(ln, o.accepting)
	return nil
}

// Down cuts every connection through the proxy and refuses new ones until Up: it closes the listener,
// waits until no connection it accepted is left untracked, resets them all (no TIME_WAIT on the proxy's
// port), then holds the address.
func (o *Outage) Down() {
	o.mu.Lock()
	ln, accepting := o.ln, o.accepting
	o.ln = nil
	o.mu.Unlock()
	if ln == nil {
		return
	}
	_ = ln.Close()
	<-accepting
	o.mu.Lock()
	defer o.mu.Unlock()
	for c := range o.conns {
		reset(c)
		delete(o.conns, c)
	}
	o.hold()
}

// reset closes c with a reset rather than a FIN, so the proxy's side leaves no TIME_WAIT on its port.
func reset(c net.Conn) {
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}

// hold binds the proxy's address without listening, right after the listener closed. o.mu must be held.
func (o *Outage) hold() { o.held = holdAddr(o.Addr) }

// holdAddr binds a socket to addr (an IPv4 host:port) without listening, and returns it (-1 if it could
// not): connections to addr are refused, and no other process can take the port meanwhile. It binds
// without SO_REUSEADDR, so that nobody else can bind the port (Go's listeners set it); where a connection
// closed earlier still holds the port in TIME_WAIT, only with it. Best effort: if it cannot bind at all,
// the address is free until the socket's owner listens there again.
func holdAddr(addr string) int {
	fd, err := bindAddr(addr, false)
	if err != nil {
		fd, _ = bindAddr(addr, true)
	}
	return fd
}

// bindAddr binds a socket to addr, with or without SO_REUSEADDR, and returns it (-1 on an error).
func bindAddr(addr string, reuse bool) (int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return -1, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return -1, err
	}
	ip := net.ParseIP(host).To4()
	if ip == nil {
		return -1, fmt.Errorf("%s is not an IPv4 address", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	sa := &syscall.SockaddrInet4{Port: p}
	copy(sa.Addr[:], ip)
	if reuse {
		err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}
	if err == nil {
		err = syscall.Bind(fd, sa)
	}
	if err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// release unbinds the address hold bound. o.mu must be held.
func (o *Outage) release() error {
	if o.held < 0 {
		return nil
	}
	fd := o.held
	o.held = -1
	return syscall.Close(fd)
}

func (o *Outage) accept(ln net.Listener, done chan struct{}) {
	defer close(done)
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed by Down
		}
		o.mu.Lock()
		o.conns[c] = true // tracked before the next Accept: Down finds every accepted connection
		o.mu.Unlock()
		go o.forward(c)
	}
}

func (o *Outage) forward(c net.Conn) {
	up, err := net.Dial("tcp", o.target)
	if err != nil {
		o.untrack(c)
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

// track records conns, unless c (the first) was cut by Down meanwhile: then it closes them all.
func (o *Outage) track(conns ...net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.conns[conns[0]] { // cut by Down meanwhile
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
