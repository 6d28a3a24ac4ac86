package kafkatest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestClusterDisk starts a broker on a 64 MiB tmpfs, fills part of it, and
// checks that Stop unmounts it.
func TestClusterDisk(t *testing.T) {
	RequireAcceptance(t)
	const size = 64 << 20
	c := StartT(t, Options{Brokers: 1, Racks: []string{"a"}, DiskBytes: size})
	use := c.DiskUse()
	d, ok := use[1]
	if !ok {
		t.Fatalf("broker 1 has no size-limited disk: DiskUse() = %v", use)
	}
	if d.TotalBytes != size {
		t.Fatalf("broker 1's disk at %s holds %d bytes, want %d", d.Dir, d.TotalBytes, size)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Dir, &st); err != nil {
		t.Fatal(err)
	}
	if got := int64(st.Blocks) * st.Bsize; got != size {
		t.Fatalf("statfs(%s) says %d bytes, want %d", d.Dir, got, size)
	}
	before := d.UsedBytes

	resp, err := c.Admin().CreateTopic(t.Context(), 1, 1, nil, "fill")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fill(t.Context(), c.BootstrapServers(), "fill", 16<<20); err != nil {
		t.Fatal(err)
	}
	after := c.DiskUse()[1]
	if grew := after.UsedBytes - before; grew < 15<<20 {
		t.Fatalf("16 MiB written, but the broker's disk grew by only %d bytes (%d -> %d): the log is not on the tmpfs", grew, before, after.UsedBytes)
	}
	t.Logf("broker 1's disk %s: %d MiB of %d MiB used (%.0f%%)", after.Dir, after.UsedBytes>>20, after.TotalBytes>>20, after.Percent())

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if m, _ := mountsUnder(c.Dir()); len(m) > 0 {
		t.Fatalf("Stop left mounts: %v", m)
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Fatalf("Stop left the cluster directory: %v", err)
	}
}

// mountTestDisk mounts a small tmpfs at dir, skipping the test where
// mounting is not permitted.
func mountTestDisk(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skip("mounting a tmpfs is not permitted here (needs root)")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	all, err := mountPoints()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(all, dir)
}

// TestSweepUnmountsLeftoverDisks plays two leftovers of killed test
// processes: a cluster whose record names a dead owner, and a mount under a
// cluster directory with no record at all. The sweep unmounts both, and
// removes the recorded directory.
func TestSweepUnmountsLeftoverDisks(t *testing.T) {
	recorded, err := os.MkdirTemp("", "kafkascale-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(recorded) })
	orphan, err := os.MkdirTemp("", "kafkascale-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(orphan) })
	recordedDisk := filepath.Join(recorded, "broker-1", "data")
	orphanDisk := filepath.Join(orphan, "broker-2", "data")
	mountTestDisk(t, recordedDisk)
	mountTestDisk(t, orphanDisk)

	dead := deadPID(t)
	record := filepath.Join(SweepDir(), fmt.Sprintf("owner-%d-disktest.json", dead))
	writeRecord(t, record, ownerRecord{OwnerPID: dead, OwnerStart: 1, Dir: recorded, RemoveDir: true})

	if err := sweepStale(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{recordedDisk, orphanDisk} {
		if mounted(t, d) {
			t.Errorf("the sweep left %s mounted", d)
		}
	}
	if _, err := os.Stat(recorded); !os.IsNotExist(err) {
		t.Errorf("the sweep left the dead owner's directory: %v", err)
	}
}

// TestReaperUnmountsDisks kills a process whose cluster directory holds a
// mounted disk: the reaper must unmount it and remove the directory.
func TestReaperUnmountsDisks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	cmd, dir := startHelper(t, "reaper-disk")
	disk := filepath.Join(dir, "broker-1", "data")
	if !mounted(t, disk) {
		t.Fatalf("the helper did not mount %s", disk)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, dir, 10*time.Second)
	if mounted(t, disk) {
		t.Fatalf("the reaper left %s mounted", disk)
	}
}

// helperReaperDisk is helperReaper with a tmpfs mounted inside the
// directory, as a cluster with Options.DiskBytes has.
func helperReaperDisk() {
	dir, err := os.MkdirTemp("", "kafkatest-reaper-")
	if err != nil {
		panic(err)
	}
	disk := filepath.Join(dir, "broker-1", "data")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		panic(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=1m"); err != nil {
		panic(err)
	}
	os.WriteFile(filepath.Join(disk, "file"), []byte("x"), 0o644)
	if _, err := startReaper(dir, ""); err != nil {
		panic(err)
	}
	fmt.Println(dir)
	time.Sleep(time.Hour)
}

// TestMountDiskNamesBrokerAndDir checks the error a failed mount gives:
// the broker, the size and the directory, here one that does not exist.
func TestMountDiskNamesBrokerAndDir(t *testing.T) {
	c := &Cluster{opts: Options{DiskBytes: 200 << 20}}
	n := &node{id: 3, role: roleBroker, dir: filepath.Join(t.TempDir(), "missing", "broker-3")}
	err := c.mountDisk(n)
	if err == nil {
		_ = unmountUnder(n.dir)
		t.Fatal("mounting onto a missing directory succeeded")
	}
	want := "kafkatest: mounting a 200 MiB tmpfs for broker 3's log.dirs at " + n.dataDir() + ": "
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("error %q, want it to start with %q", got, want)
	}
}

func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Wait()
	return p.Pid
}

func writeRecord(t *testing.T, path string, rec ownerRecord) {
	t.Helper()
	if err := os.MkdirAll(SweepDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	raw := fmt.Sprintf(`{"owner_pid":%d,"owner_start":%d,"dir":%q,"remove_dir":%t}`, rec.OwnerPID, rec.OwnerStart, rec.Dir, rec.RemoveDir)
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
}
