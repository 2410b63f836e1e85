package flight

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// joined returns a hook that reports every follower that starts waiting.
func joined(g *Group[int]) chan string {
	ch := make(chan string, 1024)
	g.testHookWaiting = func(_, who string) { ch <- who }
	return ch
}

func TestManyCallersOneRun(t *testing.T) {
	const n = 64
	var g Group[int]
	waiting := joined(&g)
	release := make(chan struct{})
	started := make(chan struct{})
	var runs atomic.Int32
	fn := func() (int, error) {
		runs.Add(1)
		close(started)
		<-release
		return 42, nil
	}
	type out struct {
		res    int
		leader bool
		err    error
	}
	outs := make([]out, n)
	var wg sync.WaitGroup
	wg.Go(func() { outs[0].res, outs[0].leader, outs[0].err = g.Do(context.Background(), "k", "caller-0", fn) })
	<-started
	for i := 1; i < n; i++ {
		wg.Go(func() {
			outs[i].res, outs[i].leader, outs[i].err = g.Do(context.Background(), "k", fmt.Sprint("caller-", i), fn)
		})
	}
	for range n - 1 {
		<-waiting
	}
	close(release)
	wg.Wait()
	require.Equal(t, int32(1), runs.Load())
	leaders := 0
	for _, o := range outs {
		require.NoError(t, o.err)
		require.Equal(t, 42, o.res)
		if o.leader {
			leaders++
		}
	}
	require.Equal(t, 1, leaders)
	require.True(t, outs[0].leader)
}

var errBoom = errors.New("boom")

func TestLeaderFailureIsSharedAndNamed(t *testing.T) {
	var g Group[int]
	waiting := joined(&g)
	release := make(chan struct{})
	started := make(chan struct{})
	leaderErr := make(chan error, 1)
	go func() {
		_, leader, err := g.Do(context.Background(), "k", "unit-a", func() (int, error) {
			close(started)
			<-release
			return 0, fmt.Errorf("install: %w", errBoom)
		})
		require.True(t, leader)
		leaderErr <- err
	}()
	<-started
	const followers = 8
	errs := make(chan error, followers)
	for i := range followers {
		go func() {
			_, leader, err := g.Do(context.Background(), "k", fmt.Sprint("unit-", i), func() (int, error) {
				t.Error("a follower ran fn")
				return 0, nil
			})
			require.False(t, leader)
			errs <- err
		}()
	}
	for range followers {
		<-waiting
	}
	close(release)
	require.Equal(t, "install: boom", (<-leaderErr).Error(), "the leader gets its own error as is")
	for range followers {
		err := <-errs
		require.ErrorIs(t, err, errBoom)
		var fe *Error
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "unit-a", fe.Leader)
		require.Equal(t, "shared with unit-a: install: boom", err.Error())
	}
}

func TestFollowerLeavesOnItsOwnContext(t *testing.T) {
	var g Group[int]
	waiting := joined(&g)
	release := make(chan struct{})
	started := make(chan struct{})
	leaderDone := make(chan int)
	go func() {
		res, _, err := g.Do(context.Background(), "k", "leader", func() (int, error) {
			close(started)
			<-release
			return 7, nil
		})
		require.NoError(t, err)
		leaderDone <- res
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, _, err := g.Do(ctx, "k", "follower", nil)
		errc <- err
	}()
	<-waiting
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled, "the follower leaves while the leader still runs")
	close(release)
	require.Equal(t, 7, <-leaderDone)

	// A caller whose context is already done does not even start.
	_, leader, err := g.Do(ctx, "other", "late", func() (int, error) {
		t.Error("fn ran under a done context")
		return 0, nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, leader)
}

func TestLeaderCanceledFollowerTakesOver(t *testing.T) {
	for _, forget := range []bool{false, true} {
		t.Run(fmt.Sprint("forget=", forget), func(t *testing.T) {
			g := Group[int]{Forget: forget}
			waiting := joined(&g)
			lctx, lcancel := context.WithCancel(context.Background())
			started := make(chan struct{})
			leaderErr := make(chan error)
			go func() {
				_, leader, err := g.Do(lctx, "k", "leader", func() (int, error) {
					close(started)
					<-lctx.Done()
					return 0, fmt.Errorf("fetch: %w", lctx.Err())
				})
				require.True(t, leader)
				leaderErr <- err
			}()
			<-started
			type out struct {
				res    int
				leader bool
				err    error
			}
			const followers = 4
			outs := make(chan out, followers)
			var runs atomic.Int32
			for i := range followers {
				go func() {
					res, leader, err := g.Do(context.Background(), "k", fmt.Sprint("f", i), func() (int, error) {
						runs.Add(1)
						return 9, nil
					})
					outs <- out{res, leader, err}
				}()
			}
			for range followers {
				<-waiting
			}
			lcancel()
			require.ErrorIs(t, <-leaderErr, context.Canceled)
			leaders := 0
			for range followers {
				o := <-outs
				require.NoError(t, o.err, "another caller's cancellation is no failure of ours")
				require.Equal(t, 9, o.res)
				if o.leader {
					leaders++
				}
			}
			require.GreaterOrEqual(t, leaders, 1, "a follower retried as the new leader")
			if !forget {
				require.Equal(t, int32(1), runs.Load(), "the new leader's result is remembered for the rest")
			}
		})
	}
}

func TestRememberOrForget(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		forget   bool
		wantRuns int32
	}{
		{forget: false, wantRuns: 1},
		{forget: true, wantRuns: 3},
	} {
		t.Run(fmt.Sprint("forget=", tc.forget), func(t *testing.T) {
			g := Group[int]{Forget: tc.forget}
			var runs atomic.Int32
			fn := func() (int, error) { return int(runs.Add(1)), nil }
			for range 3 {
				_, _, err := g.Do(ctx, "ok", "u", fn)
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantRuns, runs.Load())

			var fails atomic.Int32
			bad := func() (int, error) { fails.Add(1); return 0, errBoom }
			_, leader, err := g.Do(ctx, "bad", "first", bad)
			require.True(t, leader)
			require.ErrorIs(t, err, errBoom)
			_, leader, err = g.Do(ctx, "bad", "second", bad)
			require.ErrorIs(t, err, errBoom)
			if tc.forget {
				require.True(t, leader)
				require.Equal(t, int32(2), fails.Load())
			} else {
				require.False(t, leader)
				require.Equal(t, int32(1), fails.Load(), "a failure is remembered like a success")
				require.ErrorContains(t, err, "shared with first")
			}
		})
	}
}

func TestLeaderPanicFailsFollowers(t *testing.T) {
	var g Group[int]
	waiting := joined(&g)
	started := make(chan struct{})
	release := make(chan struct{})
	panicked := make(chan any)
	go func() {
		defer func() { panicked <- recover() }()
		_, _, _ = g.Do(context.Background(), "k", "leader", func() (int, error) {
			close(started)
			<-release
			panic("bug")
		})
	}()
	<-started
	errc := make(chan error)
	go func() {
		_, _, err := g.Do(context.Background(), "k", "follower", nil)
		errc <- err
	}()
	<-waiting
	close(release)
	require.Equal(t, "bug", <-panicked, "the panic goes on in the leader's goroutine")
	err := <-errc
	require.ErrorContains(t, err, "shared with leader")
	require.ErrorContains(t, err, "panicked")
	// The key is not poisoned.
	res, leader, err := g.Do(context.Background(), "k", "later", func() (int, error) { return 1, nil })
	require.NoError(t, err)
	require.True(t, leader)
	require.Equal(t, 1, res)
}
