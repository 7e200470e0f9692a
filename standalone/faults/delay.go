package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// IPTables is the legacy iptables program that installs the NFQUEUE rules
// of delays (Debian package iptables; `make iptables` installs it).
const IPTables = "iptables-legacy"

// markBase is the high half of the packet marks of delays; the low half is
// the queue number.
const markBase = 0x44430000

// maxQueued bounds the packets one delay holds; with fail-open, packets
// beyond it pass undelayed rather than being dropped.
const maxQueued = 16384

// nextQueue hands out NFQUEUE numbers, one per delay.
var nextQueue atomic.Uint32

// queueAttempts bounds the queue numbers a delay in the current namespace
// tries: other processes there (another cluster's supervisor) may have
// bound the first ones.
const queueAttempts = 64

// Delay holds every packet of its flows for a fixed time before letting it
// through, until removed.
type Delay struct {
	ns    *Namespace
	name  string
	d     time.Duration
	queue uint16
	rules *Rules
	ipt   []string // the iptables rule, without -A/-I/-D
	nfq   *nfqueue.Nfqueue
	stop  context.CancelFunc
	log   *slog.Logger

	held    atomic.Int64  // packets waiting for their verdict
	delayed atomic.Uint64 // packets delayed so far
	failed  atomic.Uint64 // verdicts that could not be given

	removeOnce sync.Once
	removeErr  error
}

// DelayFlows delays every packet of flows by d (see the package doc for
// how) until the returned delay is removed. name identifies the fault (as
// for Drop).
//
// In the current namespace (CurrentNamespace), which other programs share,
// the NFQUEUE rule goes first in the OUTPUT chain (not last, behind rules
// that might accept the packets first), and a queue number another process
// has bound is skipped for the next one.
func DelayFlows(ns *Namespace, name string, d time.Duration, log *slog.Logger, flows ...Flow) (_ *Delay, err error) {
	if d <= 0 {
		return nil, fmt.Errorf("cannot delay %s: delay %v is not positive", name, d)
	}
	if _, err := exec.LookPath(IPTables); err != nil {
		return nil, fmt.Errorf("cannot delay %s: %s not on PATH (Debian package iptables; run make iptables): %w", name, IPTables, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dl := &Delay{ns: ns, name: name, d: d, log: log}
	defer func() {
		if err != nil {
			_ = dl.Remove()
		}
	}()
	for attempt := 1; ; attempt++ {
		dl.queue = uint16(nextQueue.Add(1))
		err := dl.listen()
		if err == nil {
			break
		}
		taken := errors.Is(err, unix.EPERM) || errors.Is(err, unix.EBUSY)
		if !ns.current || !taken || attempt == queueAttempts {
			return nil, err
		}
		log.Debug("NFQUEUE taken by another process; trying the next", "fault", name, "queue", dl.queue)
	}
	pktMark := markBase | uint32(dl.queue)
	ipt := []string{"OUTPUT", "-m", "mark", "--mark", fmt.Sprintf("0x%x", pktMark),
		"-j", "NFQUEUE", "--queue-num", strconv.Itoa(int(dl.queue)), "--queue-bypass"}
	add := "-A"
	if ns.current {
		add = "-I"
	}
	if _, err := ns.Run(context.Background(), IPTables, append([]string{"-w", "-t", "filter", add}, ipt...)...); err != nil {
		return nil, fmt.Errorf("cannot delay %s: %w", name, err)
	}
	dl.ipt = ipt
	if dl.rules, err = mark(ns, name, pktMark, flows...); err != nil {
		return nil, fmt.Errorf("cannot delay %s: %w", name, err)
	}
	return dl, nil
}

// listen binds the delay's queue in the namespace and holds every packet
// queued there for d. If it fails, it leaves nothing open.
func (dl *Delay) listen() (err error) {
	f, err := dl.ns.open()
	if err != nil {
		return err
	}
	defer f.Close()
	nfq, err := nfqueue.Open(&nfqueue.Config{
		NetNS: int(f.Fd()), NfQueue: dl.queue, MaxQueueLen: maxQueued,
		Copymode: nfqueue.NfQnlCopyMeta, AfFamily: unix.AF_INET,
		Flags: nfqueue.NfQaCfgFlagFailOpen, WriteTimeout: time.Second,
	})
	if err != nil {
		return fmt.Errorf("cannot delay %s: cannot open NFQUEUE %d in %s: %w", dl.name, dl.queue, dl.ns, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			cancel()
			_ = nfq.Close()
		}
	}()
	if err := nfq.SetOption(netlink.NoENOBUFS, true); err != nil {
		return fmt.Errorf("cannot delay %s: %w", dl.name, err)
	}
	hook := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		id := *a.PacketID
		dl.held.Add(1)
		dl.delayed.Add(1)
		time.AfterFunc(dl.d, func() {
			defer dl.held.Add(-1)
			if err := nfq.SetVerdict(id, nfqueue.NfAccept); err != nil {
				dl.failed.Add(1)
				dl.log.Warn("cannot release a delayed packet", "fault", dl.name, "id", id, "err", err)
			}
		})
		return 0
	}
	onErr := func(err error) int {
		if ctx.Err() != nil {
			return 1
		}
		// The kernel answers a verdict for a packet it no longer holds
		// (ENOENT) on the socket; the delay goes on.
		dl.log.Debug("NFQUEUE receive error", "fault", dl.name, "err", err)
		return 0
	}
	if err := nfq.RegisterWithErrorFunc(ctx, hook, onErr); err != nil {
		return fmt.Errorf("cannot delay %s: cannot bind NFQUEUE %d: %w", dl.name, dl.queue, err)
	}
	dl.nfq, dl.stop = nfq, cancel
	return nil
}

// Delayed is how many packets were delayed so far.
func (dl *Delay) Delayed() uint64 { return dl.delayed.Load() }

// Duration is the delay of every packet.
func (dl *Delay) Duration() time.Duration { return dl.d }

// Remove stops delaying new packets, lets every packet already held pass
// once its delay is over, and releases the queue. It is idempotent.
func (dl *Delay) Remove() error {
	dl.removeOnce.Do(func() { dl.removeErr = dl.remove() })
	return dl.removeErr
}

func (dl *Delay) remove() error {
	var errs []error
	if dl.rules != nil {
		errs = append(errs, dl.rules.Remove())
	}
	if dl.ipt != nil && dl.ns.exists() {
		if _, err := dl.ns.Run(context.Background(), IPTables, append([]string{"-w", "-t", "filter", "-D"}, dl.ipt...)...); err != nil {
			errs = append(errs, err)
		}
	}
	if dl.nfq != nil {
		// Held packets are released by their timers; packets still in the
		// kernel's queue are read and held too. Both end within about d.
		deadline := time.Now().Add(dl.d + 5*time.Second)
		for dl.held.Load() > 0 || dl.kernelQueued() > 0 {
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("cannot release the packets delayed by %s: %d still held", dl.name, dl.held.Load()))
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		dl.stop()
		errs = append(errs, dl.nfq.Close())
	}
	if n := dl.failed.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("delay %s: %d delayed packets could not be released", dl.name, n))
	}
	return errors.Join(errs...)
}

// kernelQueued is how many packets wait in the kernel's queue of the delay
// (queue_total of /proc/net/netfilter/nfnetlink_queue in the namespace; 0
// if it cannot be read).
func (dl *Delay) kernelQueued() int {
	n := 0
	_ = dl.ns.Do(func() error {
		f, err := os.Open("/proc/thread-self/net/netfilter/nfnetlink_queue")
		if err != nil {
			return err
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			// queue_number peer_portid queue_total copy_mode copy_range
			// queue_dropped user_dropped id_sequence 1
			fields := strings.Fields(s.Text())
			if len(fields) >= 3 && fields[0] == strconv.Itoa(int(dl.queue)) {
				n, _ = strconv.Atoi(fields[2])
			}
		}
		return s.Err()
	})
	return n
}
