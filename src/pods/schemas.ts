/**
 * The request and response schemas of the pod routes (docs/pods.md), AgentMail's `Pod`,
 * `CreatePodRequest` and `ListPodsResponse`. Apart from the store so the loops, which never
 * check a request, do not load typebox.
 */
import { Type, type Static } from 'typebox';
import { PageQuery } from '../core/schemas.js';

/** Pod ids are svc-made UUIDv7s, or `default`; the bound only stops junk early. */
export const POD_ID_MAX = 64;
/** A pod's name is a label for people: one line, bounded. */
export const POD_NAME_MAX = 200;
/** As for inboxes: the caller's idempotency key. */
export const POD_CLIENT_ID_MAX = 128;

export const PodId = Type.String({ minLength: 1, maxLength: POD_ID_MAX });
export const PodParams = Type.Object({ pod_id: PodId });
export type PodParams = Static<typeof PodParams>;

const PodName = Type.String({ minLength: 1, maxLength: POD_NAME_MAX, pattern: '^[^\\u0000-\\u001f\\u007f]*$' });

export const CreatePodBody = Type.Object(
  {
    // null is accepted as "omitted": the AgentMail SDK may send explicit nulls.
    name: Type.Optional(Type.Union([PodName, Type.Null()])),
    client_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: POD_CLIENT_ID_MAX }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreatePodBody = Static<typeof CreatePodBody>;

export const PodResponse = Type.Object({
  pod_id: Type.String(),
  name: Type.String(),
  client_id: Type.Optional(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type PodResponse = Static<typeof PodResponse>;

export const PodListQuery = Type.Object(PageQuery);
export type PodListQuery = Static<typeof PodListQuery>;
