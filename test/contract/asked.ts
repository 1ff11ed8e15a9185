/** When the person behind an SDK driver's client was last asked (`performance.now()`): where the client's wait starts. */
export const asked = { at: Number.NaN };
