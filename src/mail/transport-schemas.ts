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
    edge: Type.Optional(Type.Union([EdgeConfig, Type.Null()])),
    smtp: Type.Optional(Type.Union([SmtpConfig, Type.Null()])),
  },
  { additionalProperties: false },
);

export type TransportBody = Static<typeof TransportBody>;

/** The owner's view of the transport (`GET`/`PUT /owner/transport`): secrets only as `*_set` flags. */
export const TransportResponse = Type.Object({
  configured: Type.Boolean(),
  edge: Type.Union([Type.Object({ url: Type.String(), token_set: Type.Boolean() }), Type.Null()]),
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
