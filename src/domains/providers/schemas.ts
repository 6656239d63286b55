/**
 * The request and response schemas of `/owner/dns-provider` (docs/dns-providers.md); the logic is
 * in ./config.ts. Apart so that the provisioning loop, which only reads the stored provider, does
 * not load typebox. Secrets (the TSIG secret, the PowerDNS API key, the Cloudflare API token) are write-only: the response
 * says only whether one is set.
 */
import { Type, type Static } from 'typebox';

const Common = {
  /** The zones the provider serves; a domain is published in the longest one it is inside. Without it, each domain is its own zone. */
  zones: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { maxItems: 100 })),
  /** TTL of the records svc adds, in seconds. */
  ttl: Type.Optional(Type.Integer({ minimum: 60, maximum: 86_400 })),
};

export const Rfc2136Config = Type.Object(
  {
    kind: Type.Literal('rfc2136'),
    server: Type.String({ minLength: 1, maxLength: 253 }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65_535 })),
    transport: Type.Optional(Type.Union([Type.Literal('tcp'), Type.Literal('udp')])),
    key_name: Type.String({ minLength: 1, maxLength: 253 }),
    algorithm: Type.Optional(Type.Union([Type.Literal('hmac-sha256'), Type.Literal('hmac-sha512')])),
    /** Base64, as in BIND's and Knot's key files. Omitted: the stored one is kept when the key name is the same. */
    secret: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    ...Common,
  },
  { additionalProperties: false },
);

export const PowerDnsConfig = Type.Object(
  {
    kind: Type.Literal('powerdns'),
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    server_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' })),
    /** Omitted: the stored one is kept when the URL is the same. */
    api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    ...Common,
  },
  { additionalProperties: false },
);

export const CloudflareConfig = Type.Object(
  {
    kind: Type.Literal('cloudflare'),
    /** An API token with Zone:DNS:Edit (and Zone:Read without zone_id). Omitted: the stored one is kept when api_base is the same. */
    api_token: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    /** The zone's id (its Overview page); omitted: looked up by the zone's name. */
    zone_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' })),
    /** The API's base URL; https://api.cloudflare.com/client/v4 unless set (tests, a proxy). */
    api_base: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    ...Common,
  },
  { additionalProperties: false },
);

export const DnsProviderBody = Type.Union([Rfc2136Config, PowerDnsConfig, CloudflareConfig]);
export type DnsProviderBody = Static<typeof DnsProviderBody>;

export const DnsProviderResponse = Type.Object({
  configured: Type.Boolean(),
  provider: Type.Union([
    Type.Object({
      kind: Type.Literal('rfc2136'),
      server: Type.String(),
      port: Type.Integer(),
      transport: Type.Union([Type.Literal('tcp'), Type.Literal('udp')]),
      key_name: Type.String(),
      algorithm: Type.Union([Type.Literal('hmac-sha256'), Type.Literal('hmac-sha512')]),
      secret_set: Type.Boolean(),
      zones: Type.Array(Type.String()),
      ttl: Type.Integer(),
    }),
    Type.Object({
      kind: Type.Literal('powerdns'),
      url: Type.String(),
      server_id: Type.String(),
      api_key_set: Type.Boolean(),
      zones: Type.Array(Type.String()),
      ttl: Type.Integer(),
    }),
    Type.Object({
      kind: Type.Literal('cloudflare'),
      zone_id: Type.Union([Type.String(), Type.Null()]),
      api_base: Type.String(),
      api_token_set: Type.Boolean(),
      zones: Type.Array(Type.String()),
      ttl: Type.Integer(),
    }),
    Type.Null(),
  ]),
});
export type DnsProviderResponse = Static<typeof DnsProviderResponse>;
