/** The per-request state both SDK lines' `Protocol` keep, under these names (v1 1.x, v2 2.x). */
interface SdkProtocolState {
  _responseHandlers?: unknown;
  _progressHandlers?: unknown;
  _cleanupTimeout?: unknown;
}

/**
 * Ends the SDK's wait for a request the call already settled by dropping what the SDK's
 * `Protocol` keeps for it (its response handler, progress handler and timer), exactly what its
 * own `_onresponse` drops before calling the handler. The SDK's promise for that request then
 * never settles; the facade has stopped listening to it, and nothing holds it any more.
 *
 * This avoids handing the SDK a local error response, which both SDK lines validate with zod
 * three times (two of which fail, building zod issues: 20 to 50 µs per cancelled call here).
 * The shape is checked on every use: a client without these maps and method (another SDK
 * version) gets `false`, and the wire falls back to the local error response.
 */
export function sdkWaitDropper(client: object): (id: string | number) => boolean {
  const state = client as unknown as SdkProtocolState;
  return (id) => {
    const handlers = state._responseHandlers;
    const progress = state._progressHandlers;
    if (!(handlers instanceof Map) || !(progress instanceof Map) || typeof state._cleanupTimeout !== "function") return false;
    // The SDKs key their maps by Number(id), as their _onresponse does.
    const key = Number(id);
    if (!handlers.has(key)) return false;
    handlers.delete(key);
    progress.delete(key);
    (state._cleanupTimeout as (messageId: number) => void).call(client, key);
    return true;
  };
}
