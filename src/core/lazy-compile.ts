/**
 * Route schemas compiled on first use instead of at start-up. Compiling every route's request
 * validators (Ajv) and response serializers (fast-json-stringify) took most of the main thread's
 * start-up (issue 19); now a route's code is made the first time it is needed, and everything not
 * yet used is compiled in the background once the service is listening (`warmSchemas`), one schema
 * per event-loop turn, so a request never waits behind the whole table and a schema error still
 * shows up within moments of start, not at some later first request.
 */
/** Compilations not yet done, in registration order. */
const unwarmed = new Set<() => void>();

/** `compile` deferred to the first call of the returned function (or to `warmSchemas`). */
export function lazy<F extends (...args: never[]) => unknown>(compile: () => F, onCompiled?: (fn: F) => void): () => F {
  let compiled: F | null = null;
  const get = (): F => {
    if (compiled === null) {
      unwarmed.delete(warm);
      compiled = compile();
      onCompiled?.(compiled);
    }
    return compiled;
  };
  const warm = () => void get();
  unwarmed.add(warm);
  return get;
}

/** Compiles every schema not yet compiled, one per turn of the event loop; resolves when done. */
export function warmSchemas(): Promise<void> {
  return new Promise((resolve) => {
    const next = () => {
      const first = unwarmed.values().next();
      if (first.done) return resolve();
      first.value();
      setImmediate(next);
    };
    setImmediate(next);
  });
}
