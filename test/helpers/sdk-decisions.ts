/**
 * Every method of the AgentMail SDK (`agentmail` in package-lock.json) and what svc decided for
 * it (issue 35), mirrored row by row in docs/agentmail-compat.md ("Every SDK method").
 * test/api/sdk-conformance.test.ts walks the client and fails for a method not decided here, so
 * a new SDK release with more methods fails until each new one is decided;
 * test/unit/sdk-decisions.test.ts checks the doc's table says the same.
 */
import type { AgentMailClient } from 'agentmail';

/** Served; conformance-tested with the SDK's own schema, validation on. */
export const WORKS = [
  'apiKeys.create', 'apiKeys.delete', 'apiKeys.get', 'apiKeys.list', 'apiKeys.update', 'auth.me', 'domains.create',
  'domains.delete', 'domains.get', 'domains.getSetupLink', 'domains.getZoneFile', 'domains.list', 'domains.update',
  'domains.verify', 'drafts.get', 'drafts.getAttachment', 'drafts.list', 'inboxes.apiKeys.create',
  'inboxes.apiKeys.delete', 'inboxes.apiKeys.list', 'inboxes.apiKeys.update', 'inboxes.create', 'inboxes.delete',
  'inboxes.drafts.create', 'inboxes.drafts.delete', 'inboxes.drafts.get', 'inboxes.drafts.getAttachment',
  'inboxes.drafts.list', 'inboxes.drafts.send', 'inboxes.drafts.update', 'inboxes.events.list', 'inboxes.get',
  'inboxes.list', 'inboxes.lists.create', 'inboxes.lists.delete', 'inboxes.lists.get', 'inboxes.lists.list',
  'inboxes.messages.batchGet', 'inboxes.messages.batchUpdate', 'inboxes.messages.delete', 'inboxes.messages.forward',
  'inboxes.messages.get', 'inboxes.messages.getAttachment', 'inboxes.messages.getRaw', 'inboxes.messages.list',
  'inboxes.messages.reply', 'inboxes.messages.replyAll', 'inboxes.messages.search', 'inboxes.messages.send',
  'inboxes.messages.update', 'inboxes.metrics.queryEvents', 'inboxes.metrics.queryUsage', 'inboxes.search',
  'inboxes.threads.delete', 'inboxes.threads.get', 'inboxes.threads.getAttachment', 'inboxes.threads.list',
  'inboxes.threads.search', 'inboxes.threads.update', 'inboxes.update', 'inboxes.webhooks.create',
  'inboxes.webhooks.delete', 'inboxes.webhooks.get', 'inboxes.webhooks.getHeaders', 'inboxes.webhooks.list',
  'inboxes.webhooks.update', 'inboxes.webhooks.updateHeaders', 'lists.create', 'lists.delete', 'lists.get',
  'lists.list', 'metrics.queryEvents', 'metrics.queryUsage', 'organizations.get', 'pods.apiKeys.create',
  'pods.apiKeys.delete', 'pods.apiKeys.list', 'pods.apiKeys.update', 'pods.create', 'pods.delete',
  'pods.domains.create', 'pods.domains.delete', 'pods.domains.get', 'pods.domains.getZoneFile', 'pods.domains.list',
  'pods.domains.update', 'pods.domains.verify', 'pods.drafts.get', 'pods.drafts.getAttachment', 'pods.drafts.list',
  'pods.get', 'pods.inboxes.create', 'pods.inboxes.delete', 'pods.inboxes.get', 'pods.inboxes.list',
  'pods.inboxes.search', 'pods.inboxes.update', 'pods.list', 'pods.lists.create', 'pods.lists.delete',
  'pods.lists.get', 'pods.lists.list', 'pods.metrics.queryEvents', 'pods.metrics.queryUsage', 'pods.threads.delete',
  'pods.threads.get', 'pods.threads.getAttachment', 'pods.threads.list', 'pods.threads.search', 'pods.threads.update',
  'pods.webhooks.create', 'pods.webhooks.delete', 'pods.webhooks.get', 'pods.webhooks.getHeaders',
  'pods.webhooks.list', 'pods.webhooks.update', 'pods.webhooks.updateHeaders', 'threads.delete', 'threads.get',
  'threads.getAttachment', 'threads.list', 'threads.search', 'threads.update', 'webhooks.create', 'webhooks.delete',
  'webhooks.get', 'webhooks.getHeaders', 'webhooks.list', 'webhooks.update', 'webhooks.updateHeaders',
] as const;

/**
 * Served over svc's event stream, tested by another file: test/e2e/sdk-websocket.test.ts (the
 * SDK's socket). docs/websocket.md.
 */
export const WEBSOCKET = ['websockets.connect'] as const;

/**
 * No meaning for a self-hosted home: `400 not_supported` with a `fix` (src/routes/hosted-only.ts).
 * AgentMail's agent sign-up, and its sign-in network (providers, the accounts inboxes hold at
 * them, authorizing an inbox's sign-in).
 */
export const NOT_SUPPORTED = [
  'accounts.get', 'accounts.list', 'agent.signUp', 'agent.verify', 'inboxes.authorize', 'providers.connect',
  'providers.get', 'providers.list', 'providers.listAccounts', 'providers.search',
] as const;

export type SdkDecision = 'works' | 'websocket' | 'not_supported';

export const SDK_DECISIONS: ReadonlyMap<string, SdkDecision> = new Map<string, SdkDecision>([
  ...WORKS.map((m): [string, SdkDecision] => [m, 'works']),
  ...WEBSOCKET.map((m): [string, SdkDecision] => [m, 'websocket']),
  ...NOT_SUPPORTED.map((m): [string, SdkDecision] => [m, 'not_supported']),
]);

/** How each decision reads in the doc's table (docs/agentmail-compat.md). */
export const DOC_WORDING: Record<SdkDecision, string> = {
  works: 'works',
  websocket: 'works (see docs/websocket.md)',
  not_supported: 'not_supported',
};

/** The SDK's raw request passthrough: a transport, not an API method. */
export const NOT_A_METHOD = new Set(['fetch']);

/** Every method path on the client (`inboxes.messages.get`, ...), found by walking its resource getters. */
export function sdkMethods(client: AgentMailClient): string[] {
  const found: string[] = [];
  const walk = (node: object, prefix: string, depth: number) => {
    for (let proto = Object.getPrototypeOf(node); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor' || name.startsWith('_')) continue;
        const desc = Object.getOwnPropertyDescriptor(proto, name)!;
        if (desc.get && depth < 4) walk((node as Record<string, object>)[name], `${prefix}${name}.`, depth + 1);
        else if (typeof desc.value === 'function') found.push(`${prefix}${name}`);
      }
    }
  };
  walk(client, '', 0);
  return [...new Set(found)].filter((m) => !NOT_A_METHOD.has(m)).sort();
}
