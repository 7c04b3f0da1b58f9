package sandbox

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// TestSymlinkSwapRace swaps inside targets for outside ones while reads
// and writes go through them: the outside canary must never be read or
// written, whichever way each race goes. Two kinds of swap run at once:
// links retargeted between inside and outside (caught when the path is
// resolved), and a real file and directory atomically exchanged with
// links to the outside (RENAME_EXCHANGE), which can happen between the
// resolution and the operation and must be caught by os.Root.
func TestSymlinkSwapRace(t *testing.T) {
	w := newWorld(t)
	w.file(t, "inside.txt", "inside")
	w.file(t, "realdir/secret.txt", "inside too")
	w.file(t, "swapdir/secret.txt", "inside three")
	w.file(t, "swapfile", "inside four")
	w.link(t, "inside.txt", "flip")
	w.link(t, "realdir", "flipdir")
	w.link(t, w.outside, "parkeddir")
	w.link(t, w.canary, "parkedfile")
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	retarget := func(target, name string) error {
		tmp := w.in(name + ".new")
		_ = os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return err
		}
		return os.Rename(tmp, w.in(name))
	}
	exchange := func(a, b string) error {
		return unix.Renameat2(unix.AT_FDCWD, w.in(a), unix.AT_FDCWD, w.in(b), unix.RENAME_EXCHANGE)
	}
	// A write to swapfile renames a new file over the name, and so may
	// replace the link parked there; put the link back when it is gone.
	relink := func() error {
		for _, n := range []string{"swapfile", "parkedfile"} {
			if fi, err := os.Lstat(w.in(n)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return nil
			}
		}
		return retarget(w.canary, "parkedfile")
	}
	stop := make(chan struct{})
	var flipper sync.WaitGroup
	var flips atomic.Int64
	flipper.Add(1)
	go func() {
		defer flipper.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var errs []error
			if i%2 == 0 {
				errs = append(errs, retarget(w.canary, "flip"), retarget(w.outside, "flipdir"))
			} else {
				errs = append(errs, retarget("inside.txt", "flip"), retarget("realdir", "flipdir"))
			}
			errs = append(errs, exchange("swapdir", "parkeddir"), relink(), exchange("swapfile", "parkedfile"))
			if !assert.NoError(t, errors.Join(errs...)) {
				return
			}
			flips.Add(1)
		}
	}()

	refused := func(err error) bool {
		return assert.Contains(t, []Kind{ErrOutside, ErrNotFound, ErrInvalid}, KindOf(err), "%v", err)
	}
	names := []string{"flip", "flipdir/secret.txt", "swapdir/secret.txt", "swapfile"}
	var reads, refusals [4]atomic.Int64
	var workers sync.WaitGroup
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for range 120 {
				for i, name := range names {
					if got, err := readString(ctx, s, name); err == nil {
						assert.NotContains(t, got, "canary", "read the outside file through %s", name)
						reads[i].Add(1)
					} else if refused(err) {
						refusals[i].Add(1)
					}
					if _, err := s.Write(ctx, name, strings.NewReader("written"), WriteOptions{}); err != nil {
						refused(err)
					}
					if _, err := s.Write(ctx, name, strings.NewReader("+"), WriteOptions{Mode: WriteAppend}); err != nil {
						refused(err)
					}
				}
				for _, dir := range []string{"flipdir", "swapdir"} {
					if _, err := s.Write(ctx, dir+"/new.txt", strings.NewReader("new"), WriteOptions{}); err == nil {
						_ = s.Delete(ctx, dir+"/new.txt", false)
					}
					_ = s.Mkdir(ctx, dir+"/made/deeper")
					_ = s.Delete(ctx, dir+"/made", true)
					_ = s.Copy(ctx, "inside.txt", dir+"/copy.txt", false)
					_ = s.Move(ctx, dir+"/copy.txt", "moved.txt", false)
					_ = s.Delete(ctx, "moved.txt", false)
					_, _ = s.List(ctx, dir)
				}
			}
		}()
	}
	workers.Wait()
	close(stop)
	flipper.Wait()
	for i, name := range names {
		t.Logf("%s: %d reads inside, %d refusals", name, reads[i].Load(), refusals[i].Load())
		assert.Positive(t, reads[i].Load(), "%s: no read went through: the race was not exercised", name)
		assert.Positive(t, refusals[i].Load(), "%s: no read was refused: the race was not exercised", name)
	}
	t.Logf("%d flips", flips.Load())
	w.checkCanary(t)
}
