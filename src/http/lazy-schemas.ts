/**
 * fastify's response serializers (fast-json-stringify) compiled on first use rather than at
 * start-up; see src/core/lazy-compile.ts for why.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { lazy } from '../core/lazy-compile.js';

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** fastify's own serializer factory (`schemaController.compilersFactory.buildSerializer`), compiling lazily. */
export const lazySerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const build = SerializerSelector()(externalSchemas, options);
  return (route) => {
    const serializer = lazy(() => build(route));
    return (doc) => serializer()(doc);
  };
};
