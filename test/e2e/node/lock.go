package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// lockName is the abstract Unix socket that one node lane per machine holds: two lanes would share the
// bridge, the pod subnet, the node's name, the kubelet's cgroups and iptables chains, and each one's
// teardown would remove what the other runs on. The kernel releases it when the process ends, however it
// ends, and it leaves no file behind.
const lockName = "@liqo-janitor-node-lane"

// Lock waits until no other node lane runs on this machine and returns the lock, held until Close or the
// process's end.
func Lock() (net.Listener, error) {
	for waited := false; ; waited = true {
		l, err := net.Listen("unix", lockName)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("taking the node lane's lock %s: %w", lockName, err)
		}
		if !waited {
			fmt.Fprintln(os.Stderr, "node lane: another one runs on this machine; waiting for it to end (they share the bridge, iptables and cgroups)")
		}
		time.Sleep(2 * time.Second)
	}
}
