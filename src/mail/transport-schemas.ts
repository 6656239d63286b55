/**
 * The request and response schemas of `/owner/transport` (src/mail/transport.ts holds the logic).
 * Apart so that the loops, which only read the transport, do not load typebox (a few MiB per thread).
 */
import { Type, type Static } from 'typebox';

export const EdgeConfig = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    token: Type.String({ minLength: 16, maxLength: 512 }),
  },
  { additionalProperties: false },
);

/** An entry of the `edges` list: without `token`, an edge already paired keeps its stored token (reads never show it, so a client can reorder or drop edges). */
export const EdgeListEntry = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    token: Type.Optional(Type.String({ minLength: 16, maxLength: 512 })),
  },
  { additionalProperties: false },
);

export const SmtpConfig = Type.Object(
  {
    host: Type.String({ minLength: 1, maxLength: 253 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    secure: Type.Optional(Type.Boolean()),
    username: Type.Optional(Type.String({ maxLength: 512 })),
    password: Type.Optional(Type.String({ maxLength: 1024 })),
    /** The SPF mechanism the provider requires (`include:amazonses.com`); checked in src/mail/transport.ts. */
    spf_include: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
  },
  { additionalProperties: false },
);

export const TransportBody = Type.Object(
  {
    /** The single-edge form: the list becomes this one edge (null: no edge). */
    edge: Type.Optional(Type.Union([EdgeConfig, Type.Null()])),
    /** The whole list, in order: outbound goes through the first healthy one. At most MAX_EDGES (src/mail/transport.ts, a clear error); this bound only keeps the body small. */
    edges: Type.Optional(Type.Array(EdgeListEntry, { maxItems: 64 })),
    smtp: Type.Optional(Type.Union([SmtpConfig, Type.Null()])),
  },
  { additionalProperties: false },
);

export type TransportBody = Static<typeof TransportBody>;

/** The owner's view of the transport (`GET`/`PUT /owner/transport`): secrets only as `*_set` flags. */
/** One edge's health as the home saw it (src/mail/edge-health.ts); never a secret. */
export const EdgeHealthView = Type.Object({
  /** Last contact succeeded and the edge is not in backoff: outbound prefers it. */
  healthy: Type.Boolean(),
  last_success_at: Type.Union([Type.String(), Type.Null()]),
  /** Our code for the last failure (`edge_unreachable`, `edge_status_503`, …), never the edge's text. */
  last_error: Type.Union([Type.String(), Type.Null()]),
  last_error_at: Type.Union([Type.String(), Type.Null()]),
  consecutive_failures: Type.Integer({ minimum: 0 }),
  backoff_until: Type.Union([Type.String(), Type.Null()]),
});
export type EdgeHealthView = Static<typeof EdgeHealthView>;

export const TransportResponse = Type.Object({
  configured: Type.Boolean(),
  /** The first edge, for clients of the single-edge form. */
  edge: Type.Union([Type.Object({ url: Type.String(), token_set: Type.Boolean() }), Type.Null()]),
  edges: Type.Array(Type.Object({ url: Type.String(), token_set: Type.Boolean(), health: EdgeHealthView })),
  smtp: Type.Union([
    Type.Object({
      host: Type.String(),
      port: Type.Integer(),
      secure: Type.Boolean(),
      username: Type.Union([Type.String(), Type.Null()]),
      password_set: Type.Boolean(),
      spf_include: Type.Union([Type.String(), Type.Null()]),
    }),
    Type.Null(),
  ]),
});
export type TransportResponse = Static<typeof TransportResponse>;
export type EdgeSettings = Static<typeof EdgeConfig>;
export type SmtpSettings = Static<typeof SmtpConfig>;
