// Package flight deduplicates concurrent work by key: the first caller
// for a key (the leader) runs the work, and every caller that asks for the
// same key while it runs (a follower) gets the leader's result.
//
// It is what golang.org/x/sync/singleflight does, with the differences the
// SDK needs:
//
//   - The leader runs fn in its own goroutine, inside Do: nothing the
//     group starts outlives the call that started it, and a panic in fn
//     panics in the leader's goroutine (followers then get an *Error
//     saying so instead of waiting forever).
//   - A follower waits with its own context and returns ctx.Err() as soon
//     as that context ends; the leader carries on for the others.
//   - A leader's failure is returned to its followers as an *Error that
//     names the leader ("shared with LEADER: cause") and unwraps to the
//     cause, so errors.Is and errors.As see through it.
//   - A flight whose leader's own context ended before fn succeeded is
//     not an answer for anyone else: it is dropped, and each follower
//     whose context is still live tries again, the first of them as the
//     new leader.
//   - Results are remembered for the lifetime of the Group (one answer
//     per key, successes and failures alike), or, with Forget set, a key
//     is dropped as soon as its flight ends, so a later call runs fn again.
//
// The zero Group is ready to use. A Group must not be copied after first use.
package flight
