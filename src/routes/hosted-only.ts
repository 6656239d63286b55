/**
 * AgentMail SDK methods that have no meaning for a self-hosted home (docs/agentmail-compat.md):
 * AgentMail's agent sign-up and its sign-in network (providers, the accounts inboxes hold there,
 * authorizing an inbox's sign-in). Each route answers `400 not_supported` with a `fix` saying
 * what to do instead, so the SDK raises a clear error rather than a bare 404.
 *
 * They are agent routes like any other: a credential is required (401 without one; sign-up, which
 * the SDK sends without one, answers anyone), and the
 * inbox form checks the inbox is in the caller's scope first (404), so the answer tells a caller
 * nothing it could not already see. Nothing from the request is echoed back.
 */
import type { FastifyPluginAsync } from 'fastify';
import { InboxParams } from '../core/schemas.js';
import { ApiError } from '../core/errors.js';
import { inboxFor } from '../auth/access.js';

const SIGN_IN_NETWORK_FIX =
  'Sign in to a site as the inbox with its address: svc extracts the codes and sign-in links of the mail it receives (the message\'s `extracted` field, or wait for one with GET /v0/inboxes/{inbox_id}/messages/wait).';

const signInNetwork = () =>
  new ApiError('not_supported', "svc does not take part in AgentMail's sign-in network (providers, accounts and inbox authorization): a self-hosted home has none.", {
    fix: SIGN_IN_NETWORK_FIX,
  });

const signUp = () =>
  new ApiError('not_supported', "AgentMail's agent sign-up does not apply to a self-hosted home: its owner creates every credential.", {
    fix: "Ask the home's owner for an API key (`svc api-keys create`, or the web app's API keys page); an MCP client signs in with OAuth on the owner's consent.",
  });

const agent = { auth: 'agent' } as const;

export const hostedOnlyRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;
  const refuse = (error: () => ApiError) => async () => {
    throw error();
  };

  // The SDK sends sign-up without a credential (it is how AgentMail hands out the first one),
  // so this one answers anyone; a credential that is sent is still checked. Its answer is fixed
  // text and reads nothing.
  app.post('/agent/sign-up', { config: { auth: 'public' } }, refuse(signUp));
  app.post('/agent/verify', { config: agent }, refuse(signUp));

  // Whatever id a path names, the answer is the same: none exists here.
  app.get('/providers', { config: agent }, refuse(signInNetwork));
  app.get('/providers/search', { config: agent }, refuse(signInNetwork));
  app.get('/providers/:provider_id', { config: agent }, refuse(signInNetwork));
  app.get('/providers/:provider_id/accounts', { config: agent }, refuse(signInNetwork));
  app.post('/providers/:provider_id/connect', { config: agent }, refuse(signInNetwork));
  app.get('/accounts', { config: agent }, refuse(signInNetwork));
  app.get('/accounts/:account_id', { config: agent }, refuse(signInNetwork));

  // An inbox outside the caller's scope is 404 first, as on every inbox route.
  app.post<{ Params: InboxParams }>('/inboxes/:inbox_id/authorize', { config: agent, schema: { params: InboxParams } }, async (request) => {
    inboxFor(db, request.principal!, request.params.inbox_id);
    throw signInNetwork();
  });
};
