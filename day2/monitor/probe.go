package monitor

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
)

// dialResult is what one TCP connection attempt says about a host.
type dialResult int

const (
	dialNoAnswer dialResult = iota // timeout, no route: nothing is known to be there
	dialRefused                    // the host answered with a reset: it is up, the port is closed
	dialOpen                       // something listens
)

func dial(ctx context.Context, ip net.IP, port int, timeout time.Duration) dialResult {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	if err == nil {
		_ = conn.Close()
		return dialOpen
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return dialRefused
	}
	return dialNoAnswer
}

// reachable reports whether any of the host's IPs answers on any of ports,
// even with a refusal: a TCP reset proves the host is up without needing ICMP
// (which needs privileges) or any particular service.
func reachable(ctx context.Context, ips []net.IP, ports []int, timeout time.Duration) (net.IP, bool) {
	for _, ip := range ips {
		for _, p := range ports {
			if dial(ctx, ip, p, timeout) != dialNoAnswer {
				return ip, true
			}
		}
	}
	return nil, false
}

// kubeletUp reports whether the kubelet port accepts connections on any IP.
func kubeletUp(ctx context.Context, ips []net.IP, port int, timeout time.Duration) (net.IP, bool) {
	for _, ip := range ips {
		if dial(ctx, ip, port, timeout) == dialOpen {
			return ip, true
		}
	}
	return nil, false
}
