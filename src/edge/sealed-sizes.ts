/**
 * The sealed-object size the home's fetch and the edge's sealing agree on, in a module of its own
 * so the inbound loop can know it without loading the sealing code (jose, typebox) before any
 * mail arrives.
 */

/**
 * Messages larger than this are sealed as v2. Smaller ones stay v1, which the batch fetch
 * (`POST /objects/fetch`) carries as JSON text; above it the home fetches each object on its own
 * (src/inbound/ingest.ts LARGE_OBJECT_BYTES is this constant).
 */
export const BINARY_SEAL_MIN_BYTES = 256 * 1024;
