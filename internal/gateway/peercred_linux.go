package gateway

import "golang.org/x/sys/unix"

// peerCred reads the credentials the kernel recorded for the peer of a
// connected Unix socket when it connected (socket(7): SO_PEERCRED).
func peerCred(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, 0, err
	}
	return int(cred.Uid), int(cred.Pid), nil
}
