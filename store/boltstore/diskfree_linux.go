package boltstore

import "syscall"

// freeSpace returns the bytes that an unprivileged writer may still use on
// the file system that holds path.
func freeSpace(path string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
