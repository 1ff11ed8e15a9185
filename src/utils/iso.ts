let second = Number.NaN;
let prefix = "";

/**
 * `new Date(ms).toISOString()`, about ten times faster for times within the same second as the
 * last call (the common case: a call's start and settle, and many calls per second). Records
 * carry ISO times; formatting them must not be what a call costs.
 */
export function isoTime(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    second = s;
    prefix = new Date(s * 1000).toISOString().slice(0, 20); // "2026-11-29T11:07:37."
  }
  const millis = ms - s * 1000;
  return `${prefix}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${Math.floor(millis)}Z`;
}
