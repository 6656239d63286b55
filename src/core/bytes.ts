/** A Buffer over the same memory as `bytes` (Buffer.from(Uint8Array) would copy it: a whole message, for a large one). */
export const bufferView = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
