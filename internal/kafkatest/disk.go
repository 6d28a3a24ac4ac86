package kafkatest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Size-limited broker disks (Options.DiskBytes): each broker's log.dirs is
// its own tmpfs of that size, so a test can fill a real disk and watch what
// Kafka does when a write finds no space. tmpfs needs no image file and no
// loop device, only the right to mount, which tests have as root.
//
// Mounts are found again from /proc/self/mountinfo rather than from memory,
// so that every cleanup path (Stop, UnregisterBroker, a failed start, the
// sweep after a dead process, the reaper) unmounts whatever is under the
// cluster's directory, including a mount whose broker never came up.

// dataDir is the broker's log.dirs (and a controller's metadata log).
func (n *node) dataDir() string { return filepath.Join(n.dir, "data") }

// mountDisk puts the broker's data directory on a tmpfs of
// Options.DiskBytes. A directory that is already a mount point (a restarted
// broker) keeps its mount and its data.
func (c *Cluster) mountDisk(n *node) error {
	if c.opts.DiskBytes <= 0 || n.role != roleBroker {
		return nil
	}
	dir := n.dataDir()
	mounted, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if slices.Contains(mounted, dir) {
		return nil
	}
	opts := "size=" + strconv.FormatInt(c.opts.DiskBytes, 10) + ",mode=0755"
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		hint := ""
		if errors.Is(err, syscall.EPERM) {
			hint = " (size-limited disks need the right to mount: tests must run as root)"
		}
		return fmt.Errorf("kafkatest: mounting a %s tmpfs for broker %d's log.dirs at %s: %w%s",
			mib(c.opts.DiskBytes), n.id, dir, err, hint)
	}
	return nil
}

// unmountDisks unmounts every mount under the cluster's directory.
func (c *Cluster) unmountDisks() error { return unmountUnder(c.dir) }

// unmountUnder unmounts every mount at or below dir, deepest first. A lazy
// unmount (MNT_DETACH) succeeds even while a dying JVM still holds a file
// open; the kernel frees the tmpfs once the last file is closed.
func unmountUnder(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("kafkatest: unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(dir string) ([]string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	all, err := mountPoints()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range all {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			out = append(out, m)
		}
	}
	return out, nil
}

// mountPoints reads the mount points of this process's mount namespace. The
// fifth field of /proc/self/mountinfo is the mount point, with space, tab,
// newline and backslash written as octal escapes.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, unescapeMount(fields[4]))
	}
	return out, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sweepMounts unmounts the mounts under this machine's default cluster
// directories (os.TempDir()/kafkascale-cluster-*) that belong to no live
// cluster: a process killed before its reaper ran leaves them, and a
// mounted tmpfs holds memory until unmounted.
func sweepMounts(liveDirs []string) error {
	all, err := mountPoints()
	if err != nil {
		return err
	}
	prefix := filepath.Join(os.TempDir(), "kafkascale-cluster-")
	var errs []error
	for _, m := range all {
		if !strings.HasPrefix(m, prefix) {
			continue
		}
		owned := false
		for _, d := range liveDirs {
			if m == d || strings.HasPrefix(m, d+"/") {
				owned = true
				break
			}
		}
		if owned {
			continue
		}
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s, left by a dead test process: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// DiskUse is a broker's size-limited disk (Options.DiskBytes) as statfs
// sees it.
type DiskUse struct {
	// Dir is the mount point, the broker's log.dirs.
	Dir        string
	UsedBytes  int64
	TotalBytes int64
}

// Percent is the share of the disk in use.
func (d DiskUse) Percent() float64 {
	if d.TotalBytes <= 0 {
		return 0
	}
	return 100 * float64(d.UsedBytes) / float64(d.TotalBytes)
}

// DiskUse reads the use of every registered broker's size-limited disk, by
// broker id. Brokers whose disk is not mounted (yet, or no longer) are left
// out; without Options.DiskBytes the map is empty.
func (c *Cluster) DiskUse() map[int32]DiskUse {
	out := map[int32]DiskUse{}
	if c.opts.DiskBytes <= 0 {
		return out
	}
	c.mu.Lock()
	nodes := c.sortedBrokersLocked()
	c.mu.Unlock()
	mounts, err := mountPoints()
	if err != nil {
		return out
	}
	for _, n := range nodes {
		dir := n.dataDir()
		if !slices.Contains(mounts, dir) {
			continue
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			continue
		}
		bs := st.Bsize
		out[n.id] = DiskUse{Dir: dir, UsedBytes: (int64(st.Blocks) - int64(st.Bfree)) * bs, TotalBytes: int64(st.Blocks) * bs}
	}
	return out
}

func mib(b int64) string {
	if b%(1<<20) == 0 {
		return strconv.FormatInt(b>>20, 10) + " MiB"
	}
	return strconv.FormatInt(b, 10) + " bytes"
}
