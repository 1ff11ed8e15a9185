// The signals of `verify` reads: a tool call made with one (the read's own calls, bounded by the
// read's signal as a read should be) takes no verifier from `verifiers`. Without this, a `"*"`
// verifier whose read timed out verified that read, whose read timed out, and so on, one read
// per timeout until the client closed (an outside tester's finding).
//
// By the signal's identity, not by where the code runs: an async context (`AsyncLocalStorage`)
// was tried and taken back, since a job queue (p-queue) starts a job in the context of the job
// before it, so a bot's own call queued behind a read took no verifier, and a read queued behind
// a bot's call did; and the context ended with the read's `verifyTimeoutMs` while a verifier that
// ignored its signal still ran.

const readSignals = new WeakSet<AbortSignal>();

/** Marks `signal` as a `verify` read's (see {@link isVerifyReadSignal}). */
export function markVerifyRead(signal: AbortSignal): void {
  readSignals.add(signal);
}

/** True when `signal` (or one of an array of them) is a `verify` read's: the call is the read's own. */
export function isVerifyReadSignal(signal: AbortSignal | readonly AbortSignal[] | undefined): boolean {
  if (signal === undefined) return false;
  if (Array.isArray(signal)) return signal.some((one) => readSignals.has(one));
  return readSignals.has(signal as AbortSignal);
}
