// One way to put behaviour around an SDK transport (the wire, the Streamable HTTP adapter, the
// attach view, the CLI recorder): a typed decoration, stacked by decorating a decorated view, so
// the layers compose in the order they were made, each seeing the one below as a transport.
//
// Why a Proxy at all: an SDK transport has members the library does not know (v1 and v2 differ,
// and frameworks read their own: `sessionId`, `protocolVersion`, `terminateSession`,
// `finishAuth`, ...), some of them on `#private` fields that only the transport itself may touch;
// only a Proxy forwards every one of them unchanged, bound to the transport. It is not on the
// per-message path: the callbacks a decoration sits in are plain functions installed on the
// transport itself, and a view is read once per request (`send`), where a Proxy `get` costs tens of
// nanoseconds against a call's microseconds (docs/performance.md).

/** A callback of the SDK `Transport` interface: how messages and the close come up. */
export type TransportCallback = "onmessage" | "onclose" | "onerror";

type Fn = (...args: never[]) => unknown;

/** What one layer changes of a transport. */
export interface TransportDecoration {
  /**
   * The view's members that are the layer's, not the transport's (`send`, `start`, `close`,
   * `setProtocolVersion`, ...). Every other member is the transport's own, bound to it.
   */
  readonly methods?: Readonly<Record<string, Fn>>;
  /**
   * The callbacks the layer sits in: each handler is installed on the transport itself, and what
   * the layer above sets on the view (the SDK's `onmessage`, ...) is kept in `up` for the handler
   * to hand a message on. A callback not named here is the transport's own.
   */
  readonly callbacks?: Readonly<Partial<Record<TransportCallback, Fn>>>;
  /**
   * When the layer above assigns one of `methods` on the view: `"inner"` sets it on the transport
   * (default), `"keep"` keeps it on the view in place of the layer's (the v2 SDK's version probe
   * wraps `start` once, with the one it read from the view), `"refuse"` refuses it.
   */
  readonly overrides?: "inner" | "keep" | "refuse";
}

/** A decorated transport: the view to hand to the layer above, and that layer's callbacks. */
export interface DecoratedTransport<T> {
  readonly view: T;
  /**
   * What the layer above set for each callback the layer sits in; until it sets one, the
   * transport's own handler from before the decoration (an attached, already connected client's).
   */
  readonly up: Record<TransportCallback, Fn | undefined>;
}

/**
 * Decorates `inner` with one layer. The transport keeps its identity where it matters to the
 * SDK (its own methods run on it); the view is a new object that stands for it one layer up.
 */
export function decorateTransport<T extends object>(inner: T, decoration: TransportDecoration): DecoratedTransport<T> {
  const own = inner as unknown as Record<string, unknown>;
  const methods: Record<string, Fn> = { ...decoration.methods };
  const callbacks = decoration.callbacks ?? {};
  const overrides = decoration.overrides ?? "inner";
  const up: Record<TransportCallback, Fn | undefined> = { onmessage: undefined, onclose: undefined, onerror: undefined };
  for (const name of Object.keys(callbacks) as TransportCallback[]) {
    up[name] = own[name] as Fn | undefined;
    own[name] = callbacks[name];
  }
  const bound = new Map<PropertyKey, { target: unknown; fn: unknown }>();
  const view = new Proxy(inner, {
    get(target, property) {
      if (typeof property === "string") {
        if (Object.hasOwn(methods, property)) return methods[property];
        if (Object.hasOwn(callbacks, property)) return up[property as TransportCallback];
      }
      const value: unknown = Reflect.get(target, property, target);
      // Methods (on the prototype) are bound, so they run on the transport and its `#private`
      // fields; an own function-valued field (`_fetch`, a handler) is returned as it is, so its
      // identity and marks (`isCancellableFetch`) survive the view.
      if (typeof value !== "function" || Object.hasOwn(target, property)) return value;
      const cached = bound.get(property);
      if (cached?.target === value) return cached.fn;
      const fn = (value as (...args: unknown[]) => unknown).bind(target);
      bound.set(property, { target: value, fn });
      return fn;
    },
    set(target, property, value: unknown) {
      if (typeof property === "string") {
        if (Object.hasOwn(callbacks, property)) {
          up[property as TransportCallback] = value as Fn | undefined;
          return true;
        }
        if (Object.hasOwn(methods, property) && overrides !== "inner") {
          if (overrides === "refuse") return false;
          methods[property] = value as Fn;
          return true;
        }
      }
      return Reflect.set(target, property, value, target);
    },
  });
  return { view, up };
}
