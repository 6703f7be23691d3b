package netimpair

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Impairment is what a host's link does to the packets the host sends, as
// `tc netem` on its interface would: set it on both hosts of a pair to
// impair both ways.
type Impairment struct {
	Loss   float64       // probability a packet is dropped (0..1)
	Delay  time.Duration // added to every packet
	Jitter time.Duration // plus a uniform random 0..Jitter: later packets may overtake
	// Reorder is the probability a packet is held back by a further
	// Delay+Jitter, so that the packets after it arrive first.
	Reorder float64
}

// Stats counts what the switch did.
type Stats struct {
	Forwarded, Dropped, Cut, Reordered int64
}

// Net is the switch and its hosts. Make it with New; Close removes every
// namespace it made.
type Net struct {
	prefix string // "10.214.N."
	tag    string // unique part of namespace and device names
	done   chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	hosts map[netip.Addr]*Host
	rnd   *rand.Rand
	stats Stats
	close sync.Once
}

// Host is one namespace on the switch.
type Host struct {
	Name string     // the network namespace (ip netns exec Name …)
	Addr netip.Addr // its address on the switch
	dev  string
	tun  *os.File
	net  *Net

	// under net.mu
	imp Impairment
	cut bool
}

// New makes an empty switch for the addresses 10.214.subnet.0/24; tag
// makes its namespace names unique on the machine (a process id, say).
func New(subnet int, tag string) *Net {
	return &Net{
		prefix: fmt.Sprintf("10.214.%d.", subnet%256),
		tag:    tag,
		done:   make(chan struct{}),
		hosts:  map[netip.Addr]*Host{},
		rnd:    rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(subnet))),
	}
}

// Check says why this machine cannot make a switch: not root, no iproute2
// or no /dev/net/tun; nil when it can (namespaces may still be refused:
// AddHost says so).
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root for network namespaces and TUN devices")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("needs iproute2 (ip netns)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("needs /dev/net/tun: %w", err)
	}
	return nil
}

// ip runs `ip args…`.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// AddHost makes namespace "ic<name><tag>" with loopback and a TUN link
// addressed 10.214.subnet.(number of hosts+1)/24, and starts forwarding
// what it sends.
func (n *Net) AddHost(name string) (*Host, error) {
	n.mu.Lock()
	idx := len(n.hosts) + 1
	n.mu.Unlock()
	h := &Host{
		Name: "ic" + name + n.tag,
		Addr: netip.MustParseAddr(fmt.Sprintf("%s%d", n.prefix, idx)),
		dev:  fmt.Sprintf("ictun%d", idx),
		net:  n,
	}
	if err := ip("netns", "add", h.Name); err != nil {
		return nil, err
	}
	tun, err := h.openTUN()
	if err != nil {
		_ = ip("netns", "del", h.Name)
		return nil, err
	}
	h.tun = tun
	n.mu.Lock()
	n.hosts[h.Addr] = h
	n.mu.Unlock()
	for _, s := range [][]string{
		{"-n", h.Name, "link", "set", "lo", "up"},
		{"-n", h.Name, "addr", "add", h.Addr.String() + "/24", "dev", h.dev},
		{"-n", h.Name, "link", "set", h.dev, "up"},
	} {
		if err := ip(s...); err != nil {
			return nil, err
		}
	}
	n.wg.Add(1)
	go n.forward(h)
	return h, nil
}

// openTUN creates h's TUN device inside its namespace: the device, and the
// file that reads and writes its packets, belong to the namespace the
// creating thread is in.
func (h *Host) openTUN() (*os.File, error) {
	var tun *os.File
	err := h.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(h.dev)
		if err != nil {
			unix.Close(fd)
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("create TUN %s: %w", h.dev, err)
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return err
		}
		tun = os.NewFile(uintptr(fd), h.dev)
		return nil
	})
	return tun, err
}

// Do runs f on a thread inside h's namespace: a socket f opens stays
// there (a listener, say, of a test that checks the switch).
func (h *Host) Do(f func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("own network namespace: %w", err)
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + h.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("namespace %s: %w", h.Name, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter namespace %s: %w", h.Name, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, and exits with this goroutine: no other
		// goroutine runs in the wrong namespace.
		return errors.Join(ferr, fmt.Errorf("leave namespace %s: %w", h.Name, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// Set changes what h's link does to packets from now on.
func (h *Host) Set(imp Impairment) {
	h.net.mu.Lock()
	defer h.net.mu.Unlock()
	h.imp = imp
}

// Cut drops every packet to or from h (true) until it is restored (false).
// Packets on their way when the link is cut are dropped too.
func (h *Host) Cut(cut bool) {
	h.net.mu.Lock()
	defer h.net.mu.Unlock()
	h.cut = cut
}

// Stats returns the counts so far.
func (n *Net) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// forward reads the packets h sends and hands each to its destination
// after its links' delays, unless they drop it.
func (n *Net) forward(h *Host) {
	defer n.wg.Done()
	buf := make([]byte, 65536)
	for {
		k, err := h.tun.Read(buf)
		if err != nil {
			return // closed
		}
		pkt := buf[:k]
		if k < 20 || pkt[0]>>4 != 4 {
			continue // IPv4 only (the kernel's IPv6 chatter goes nowhere)
		}
		dst, _ := netip.AddrFromSlice(pkt[16:20])
		wait, ok := n.route(h, dst)
		if !ok {
			continue
		}
		out := append([]byte(nil), pkt...)
		time.AfterFunc(wait, func() { n.deliver(h, dst, out) })
	}
}

// route decides one packet's fate: the delay before it arrives, or false
// when it is dropped.
func (n *Net) route(from *Host, dst netip.Addr) (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	to := n.hosts[dst]
	if to == nil {
		n.stats.Dropped++
		return 0, false
	}
	if from.cut || to.cut {
		n.stats.Cut++
		return 0, false
	}
	imp := from.imp
	if imp.Loss > 0 && n.rnd.Float64() < imp.Loss {
		n.stats.Dropped++
		return 0, false
	}
	wait := imp.Delay
	if imp.Jitter > 0 {
		wait += time.Duration(n.rnd.Int64N(int64(imp.Jitter)))
	}
	if imp.Reorder > 0 && n.rnd.Float64() < imp.Reorder {
		wait += imp.Delay + imp.Jitter
		n.stats.Reordered++
	}
	return wait, true
}

// deliver writes a packet into its destination's TUN device, unless a
// link was cut meanwhile or the switch closed.
func (n *Net) deliver(from *Host, dst netip.Addr, pkt []byte) {
	select {
	case <-n.done:
		return
	default:
	}
	n.mu.Lock()
	to := n.hosts[dst]
	cut := from.cut || to.cut
	if cut {
		n.stats.Cut++
	} else {
		n.stats.Forwarded++
	}
	n.mu.Unlock()
	if !cut {
		_, _ = to.tun.Write(pkt) // a full queue drops, as a link would
	}
}

// Close stops the switch and deletes its namespaces (and with them their
// TUN devices). Processes still running in them lose their network.
func (n *Net) Close() error {
	var errs []error
	n.close.Do(func() {
		close(n.done)
		n.mu.Lock()
		hosts := make([]*Host, 0, len(n.hosts))
		for _, h := range n.hosts {
			hosts = append(hosts, h)
		}
		n.mu.Unlock()
		for _, h := range hosts {
			errs = append(errs, h.tun.Close())
		}
		n.wg.Wait()
		for _, h := range hosts {
			errs = append(errs, ip("netns", "del", h.Name))
		}
	})
	return errors.Join(errs...)
}
