package gateway

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// xucredVersion is the struct xucred layout the kernel fills
// (XUCRED_VERSION in sys/ucred.h).
const xucredVersion = 0

// peerCred reads the credentials of the peer of a connected Unix socket
// (unix(4)): LOCAL_PEERCRED at level SOL_LOCAL gives the struct xucred
// recorded at connect time, whose cr_uid is the effective uid getpeereid(3)
// returns; LOCAL_PEERPID gives the peer's pid, for logs only.
func peerCred(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, 0, err
	}
	if cred.Version != xucredVersion {
		return -1, 0, fmt.Errorf("LOCAL_PEERCRED: xucred version %d, want %d", cred.Version, xucredVersion)
	}
	pid, err = unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		pid = 0 // the uid decides; the pid is only logged
	}
	return int(cred.Uid), pid, nil
}
