/**
 * Route schemas compiled on first use instead of at start-up. Compiling every route's request
 * validators (Ajv) and response serializers (fast-json-stringify) took most of the main thread's
 * start-up (issue 19), and keeping the compiled code of routes nobody calls cost about 25 MiB; now
 * a route's code is made the first time it is needed (a few milliseconds, once). `warmSchemas`
 * compiles everything declared and not yet compiled: the test suite runs it on the real app
 * (test/unit/lazy-compile.test.ts), so a schema that does not compile fails CI, not a request.
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

/** Compiles every schema not yet compiled, one per turn of the event loop; resolves with how many. */
export function warmSchemas(): Promise<number> {
  let count = 0;
  return new Promise((resolve, reject) => {
    const next = () => {
      const first = unwarmed.values().next();
      if (first.done) return resolve(count);
      try {
        first.value();
      } catch (err) {
        return reject(err);
      }
      count++;
      setImmediate(next);
    };
    setImmediate(next);
  });
}
