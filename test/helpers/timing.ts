// Timing bounds shared by the tests that run real processes, sockets and timers. Tests assert
// orders, counts and bounds, never absolute speeds: these are what a loaded CI machine (2 cores,
// several Node versions in a row) needs around the deadline under test. One value each for every
// file: the files that kept their own SLACK_MS of 400 now take this 500, never a tighter bound.

/** How late past its deadline a real-time event may be observed, ms. */
export const SLACK_MS = 500;

/**
 * How early by `performance.now()` a timer may seem to fire, ms: Node arms timers from libuv's
 * cached loop time, so on a busy loop one fires a few ms "early" against a fresh clock reading.
 */
export const EARLY_MS = 25;

/** Polls `predicate` every 10 ms until it holds or `withinMs` passes (monotonic clock); returns whether it held. */
export async function eventually(predicate: () => boolean, withinMs = 2_000): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    if (predicate()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return predicate();
}

/** Like `eventually`, but throws when `predicate` does not hold within `withinMs` (for a wait that must succeed). */
export async function until(predicate: () => boolean, withinMs = 5_000): Promise<void> {
  if (!(await eventually(predicate, withinMs))) throw new Error(`condition not met within ${withinMs} ms`);
}
