/**
 * What a `callOptions` hook may wrongly return (no options object), each with how the library's
 * refusal describes it: shared by the framework suites that check the refusal.
 */
export function notOptions(): Array<[unknown, string]> {
  return [
    ["30s", 'a string ("30s")'],
    [5, "a number (5)"],
    [true, "a boolean (true)"],
    [[], "an array"],
    [Promise.resolve({ timeoutMs: 1_000 }), "a Promise (callOptions must not be async)"],
    [new Map(), "a Map"],
    [new Date(0), "a Date"],
  ];
}
